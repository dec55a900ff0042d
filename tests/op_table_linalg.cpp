// Op-table cases for matmul, mm, bmm, dot, outer and linear.
#include "op_table.h"

namespace ember::testing {
namespace {

// Small values so f16/bf16 products stay exact-ish and integer sums stay in range:
// [-2, 2) for signed types, [0, 3) for unsigned ones.
Tensor small(const Shape& s, DType dt, uint64_t seed) {
  const bool uns = dt == DType::u8 || dt == DType::u16 || dt == DType::u32 || dt == DType::u64;
  return uniform(s, dt, seed, uns ? 0 : -2, uns ? 3 : 2);
}

using Fn2 = Tensor (*)(const Tensor&, const Tensor&);

int binary_case(const std::string& name, std::vector<DType> dtypes, Shape sa, Shape sb, Fn2 fn) {
  return register_case(
      OpCase{name,
             std::move(dtypes),
             [sa, sb](DType dt, uint64_t seed) {
               return Inputs{small(sa, dt, seed), small(sb, dt, seed + 1000)};
             },
             [fn](const Inputs& in) { return std::vector<Tensor>{fn(in[0], in[1])}; },
             {},
             4.0});
}

Tensor matmul_fn(const Tensor& a, const Tensor& b) { return matmul(a, b); }

const int kLinalg = [] {
  const auto num = numeric_dtypes();
  binary_case("matmul/2d", num, {3, 4}, {4, 5}, matmul_fn);
  binary_case("matmul/1d_1d", num, {6}, {6}, matmul_fn);
  binary_case("matmul/1d_2d", num, {4}, {4, 3}, matmul_fn);
  binary_case("matmul/2d_1d", num, {3, 4}, {4}, matmul_fn);
  binary_case("matmul/1d_3d", num, {4}, {2, 4, 3}, matmul_fn);
  binary_case("matmul/3d_1d", num, {2, 3, 4}, {4}, matmul_fn);
  binary_case("matmul/3d_2d", num, {2, 3, 4}, {4, 5}, matmul_fn);
  binary_case("matmul/2d_3d", num, {3, 4}, {2, 4, 5}, matmul_fn);
  binary_case("matmul/batch_broadcast", num, {2, 1, 3, 4}, {5, 4, 2}, matmul_fn);
  binary_case("matmul/k0", num, {3, 0}, {0, 2}, matmul_fn);
  binary_case("matmul/m0", num, {2, 0, 3}, {2, 3, 4}, matmul_fn);
  binary_case("matmul/long_k", num, {2, 150}, {150, 3}, matmul_fn);
  binary_case("mm", num, {5, 3}, {3, 2}, mm);
  binary_case("bmm", num, {3, 2, 4}, {3, 4, 2}, bmm);
  binary_case("dot", num, {7}, {7}, dot);
  binary_case("outer", all_dtypes(), {3}, {4}, outer);
  register_case(
      OpCase{"linear/bias",
             num,
             [](DType dt, uint64_t seed) {
               return Inputs{small({2, 3, 4}, dt, seed), small({5, 4}, dt, seed + 1),
                             small({5}, dt, seed + 2)};
             },
             [](const Inputs& in) { return std::vector<Tensor>{linear(in[0], in[1], in[2])}; },
             {},
             4.0});
  register_case(OpCase{"linear/no_bias",
                       num,
                       [](DType dt, uint64_t seed) {
                         return Inputs{small({3, 4}, dt, seed), small({2, 4}, dt, seed + 1)};
                       },
                       [](const Inputs& in) { return std::vector<Tensor>{linear(in[0], in[1])}; },
                       {},
                       4.0});
  return 0;
}();

}  // namespace
}  // namespace ember::testing
