// Ember's side of bench/onnx_vs_ort.sh: loads an ONNX model (scripts/onnx_models.py's folder:
// model.onnx, input_N.npy), tiles the inputs to --batch rows, and prints the time from the file
// to the first result and the best and median of --iters runs:
//   "ember load+first L ms best B ms median M ms"
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/onnx.h"
#include "ember/record/npy.h"

using namespace ember;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

int main(int argc, char** argv) {
  CLI::App app{"Times an ONNX model with ember::onnx"};
  std::string dir;
  int64_t batch = 0, iters = 10, threads = 2;
  app.add_option("dir", dir, "A folder of scripts/onnx_models.py")->required();
  app.add_option("--batch", batch, "Rows per input (the saved inputs tiled; 0: as saved)");
  app.add_option("--iters", iters, "Timed runs");
  app.add_option("--threads", threads, "cpu threads");
  CLI11_PARSE(app, argc, argv);
  set_num_threads(int(threads));
  std::map<std::string, Tensor> feed;
  const auto t0 = Clock::now();
  const onnx::Model model = onnx::load(dir + "/model.onnx", Device::cpu());
  for (const onnx::ValueInfo& in : model.inputs()) {
    Tensor x = record::load_npy(dir + "/" + in.name + ".npy");
    if (batch > 0 && x.size(0) != batch) {
      std::vector<Tensor> rows;
      for (int64_t i = 0; i < batch; ++i) rows.push_back(x.narrow(0, i % x.size(0), 1));
      x = cat(rows, 0);
    }
    feed[in.name] = x;
  }
  InferenceMode inference;
  auto run = [&] {
    auto out = model.run(feed);
    sync(Device::cpu());
    return out;
  };
  run();
  const double first = ms_since(t0);
  std::vector<double> ts;
  for (int64_t i = 0; i < iters; ++i) {
    const auto t = Clock::now();
    run();
    ts.push_back(ms_since(t));
  }
  std::sort(ts.begin(), ts.end());
  std::printf("ember load+first %.1f ms best %.2f ms median %.2f ms\n", first, ts.front(),
              ts[ts.size() / 2]);
}
