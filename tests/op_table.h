// The op table: every op x dtype runs on every backend built, on contiguous, permuted,
// stepped-slice and broadcast inputs, and is compared against the reference backend on
// contiguous inputs. Family test files register cases with EMBER_OP_CASE.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ember/ember.h"

namespace ember::testing {

using Inputs = std::vector<Tensor>;

struct OpCase {
  std::string name;           // "add", "conv2d/stride2_groups2"
  std::vector<DType> dtypes;  // each is one op x dtype case
  /// Contiguous inputs on Device::ref() for `dtype`, deterministic in `seed`.
  std::function<Inputs(DType dtype, uint64_t seed)> inputs;
  /// The op. May return several outputs (values and indices...).
  std::function<std::vector<Tensor>(const Inputs&)> fn;
  /// Which inputs get the permuted / stepped / broadcast variants (empty = all).
  std::vector<bool> vary;
  /// Multiplies the per-dtype tolerance (for ops that accumulate, e.g. matmul, conv).
  double tol_scale = 1.0;
};

/// Adds a case to the table (call from a static initializer via EMBER_OP_CASE) and registers
/// its gtests, one per backend built: OpTable.<name>/<backend> ("OpTable.sum/m1m2/cpu": '-' in
/// the name becomes 'm'). `file` (the family file, op_table_<family>.cpp, which the caller's
/// is by default) groups them into ctest tests OpTable/<family>/<backend>.
int register_case(OpCase c, const char* file = __builtin_FILE(), int line = __builtin_LINE());
const std::vector<OpCase>& all_cases();

// ---- input helpers (deterministic; on Device::ref()) ----
/// Uniform values in [lo, hi) converted to dtype (integers: floor; bool: x >= (lo+hi)/2).
Tensor uniform(const Shape& shape, DType dtype, uint64_t seed, double lo = -2, double hi = 2);
/// Integers uniform in [lo, hi) as dtype (for indices use i64).
Tensor integers(const Shape& shape, DType dtype, uint64_t seed, int64_t lo, int64_t hi);

// Dtype groups.
std::vector<DType> all_dtypes();      // all 13
std::vector<DType> float_dtypes();    // f32 f64 f16 bf16
std::vector<DType> numeric_dtypes();  // all but bool
std::vector<DType> int_dtypes();      // signed and unsigned integers
std::vector<DType> signed_dtypes();   // floats and signed integers

/// Compares got against want: same shape and dtype, values within the dtype's tolerance
/// (scaled); where want is a special float, the same one bit for bit: a zero of the same sign,
/// the same infinity, NaN where NaN (any sign and payload). Returns "" when equal, else a
/// description of the first mismatch.
std::string compare(const Tensor& want, const Tensor& got, double tol_scale = 1.0);

}  // namespace ember::testing

#define EMBER_OP_CONCAT2(a, b) a##b
#define EMBER_OP_CONCAT(a, b) EMBER_OP_CONCAT2(a, b)
/// EMBER_OP_CASE({"name", dtypes, inputs_fn, op_fn});
#define EMBER_OP_CASE(...)                                     \
  static const int EMBER_OP_CONCAT(ember_op_case_, __LINE__) = \
      ::ember::testing::register_case(::ember::testing::OpCase __VA_ARGS__)
