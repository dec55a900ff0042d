// A user's program built with -fsanitize=address against the Release library: its GEMM above
// 128^3 goes to OpenBLAS, which must not be opened with RTLD_DEEPBIND under a sanitizer runtime
// (ASan aborts). ctest: user/asan_program (tests/CMakeLists.txt).
#include <ember/ember.h>
#include <iostream>
int main() {
  using namespace ember;
  Tensor a = ones({300, 300}), b = ones({300, 300});
  std::cout << "sum=" << matmul(a, b).sum().item<float>() << "\n";  // 300^3 = 2.7e+07
}
