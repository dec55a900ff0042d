// Ember in ten lines: tensors, broadcasting, a matrix product and a reduction.
#include <ember/ember.h>

#include <iostream>

int main() {
  using namespace ember;
  Tensor x = arange(6, DType::f32).reshape({2, 3});  // [[0, 1, 2], [3, 4, 5]]
  Tensor w = ones({3, 2});
  Tensor y = matmul(x * 2 + 1, w);  // [[9, 9], [27, 27]]
  std::cout << "x =\n" << x << "\ny = (2x + 1) @ ones =\n" << y << "\n";
  std::cout << "mean(y) = " << mean(y).item<float>() << "\n";
}
