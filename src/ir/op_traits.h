// The facts about each element-wise primitive (ir::UnaryOp, ir::BinaryOp) that more than one
// layer needs, in one table per enum (op_traits.cpp): its IR name (kernel keys), the public op
// a user calls (error tags), the dtypes it accepts and computes in, and whether it returns bool.
// The frontend, the ref kernels, the cpu backend and codegen read them from here; a new op is one
// row. Kept out of ir/ops.h so that a change here rebuilds only the files that look ops up.
#pragma once
#include <cstddef>
#include <cstdint>

#include "ir/ops.h"

namespace ember::ir {

/// How an element-wise op treats its input dtype (the promoted dtype, for binary ops).
enum class DTypeRule : uint8_t {
  any,          // every dtype, computed as given
  to_float,     // integer and bool inputs compute in kDefaultFloat (torch's "float-only" ops)
  float_only,   // floating-point inputs only, others are an error
  no_bool,      // every dtype but bool
  bool_to_i64,  // bool computes in i64, other dtypes as given
  int_or_bool,  // integer and bool inputs only
  int_only,     // integer inputs only
};

struct UnaryTraits {
  UnaryOp op;
  const char* name;       // the IR's name, used in kernel keys (name(op))
  const char* user_name;  // the public op, the tag of its errors (user_name(op))
  DTypeRule rule;
  bool predicate;  // the result is bool (isnan, isinf, isfinite, logical_not)
};

struct BinaryTraits {
  BinaryOp op;
  const char* name;       // as UnaryTraits
  const char* user_name;  // as UnaryTraits
  const char* variant;    // what tells the op apart among those of its user_name (user_variant)
  DTypeRule rule;         // applied to result_type(a, b)
  bool predicate;         // comparisons and logical ops: the result is bool
  const char* hint;       // appended to the error of a rejected dtype ("" for none)
};

/// The number of enumerators: UnaryOp and BinaryOp run from 0 to these minus one. The tables
/// check at compile time that they have this many rows, in enumerator order; an op appended
/// after the last enumerator moves the count here too.
inline constexpr size_t kUnaryOpCount = size_t(UnaryOp::softplus) + 1;
inline constexpr size_t kBinaryOpCount = size_t(BinaryOp::logical_xor) + 1;

const UnaryTraits& traits(UnaryOp op);
const BinaryTraits& traits(BinaryOp op);

/// Why `rule` rejects dtype t, as the rest of an error message ("is not supported for bool
/// tensors"), or nullptr when it accepts t.
const char* rejects(DTypeRule rule, DType t);
/// The dtype an op of `rule` computes in for an accepted input dtype t.
DType compute_dtype(DTypeRule rule, DType t);

}  // namespace ember::ir
