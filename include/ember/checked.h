// Checks of numbers read from files (checkpoints, state dicts, model-file metadata): a value
// out of range, not finite, or not an integer where an integer is meant is an ember::Error that
// names the field, never a NaN that trains on or a cast that is undefined behaviour (a double is
// compared against the int64 range before it is converted).
//
//   const FileField f{"load_checkpoint", path, "epoch"};
//   s.epoch = checked_int64(f, text, 0, kMaxFileCount);
//   // "[load_checkpoint] runs/x/epoch-0002.safetensors: field 'epoch' = -3 is not an integer
//   //  in [0, 9007199254740992]"
#pragma once
#include <cstdint>
#include <limits>
#include <string>

#include "ember/tensor.h"

namespace ember {

/// Where a value came from, for its error: "[op] where: field 'name' = <value> is not ...".
struct FileField {
  const char* op;     ///< the error's tag ("load_checkpoint", "Adam.load_state_dict")
  std::string where;  ///< the file ("" when a caller adds it to the message)
  std::string name;   ///< the field ("epoch", "state.0.step")
};

/// The largest counter (epoch, step, batch) a file may hold: 2^53, the last integer a double
/// (the type of optimizer step counts and of the "epoch" metric) holds exactly.
inline constexpr int64_t kMaxFileCount = int64_t(1) << 53;

/// v when it is finite and in [lo, hi]. Throws ember::Error naming the field otherwise (NaN and
/// infinities are always errors).
double checked_double(const FileField& f, double v, double lo = -std::numeric_limits<double>::max(),
                      double hi = std::numeric_limits<double>::max());
/// v as an int64 when it is an integer in [lo, hi] (range checked before converting). Throws
/// ember::Error naming the field for NaN, infinities, fractions and values out of range.
int64_t checked_int64(const FileField& f, double v,
                      int64_t lo = std::numeric_limits<int64_t>::min(),
                      int64_t hi = std::numeric_limits<int64_t>::max());
/// Decimal text (an optional '-' and digits only, no spaces or '+') as an int64 in [lo, hi].
/// Throws ember::Error naming the field otherwise.
int64_t checked_int64(const FileField& f, const std::string& text,
                      int64_t lo = std::numeric_limits<int64_t>::min(),
                      int64_t hi = std::numeric_limits<int64_t>::max());
/// Decimal digits as a uint64. Throws ember::Error naming the field otherwise.
uint64_t checked_uint64(const FileField& f, const std::string& text);

/// The one value of `t` (any dtype, any device) as checked_double. Throws ember::Error naming
/// the field when t is undefined or does not hold exactly one element.
double checked_double(const FileField& f, const Tensor& t,
                      double lo = -std::numeric_limits<double>::max(),
                      double hi = std::numeric_limits<double>::max());
/// The one value of `t` as checked_int64: integer dtypes are read exactly (a u64 above
/// INT64_MAX is out of range), floating ones must hold an integer.
int64_t checked_int64(const FileField& f, const Tensor& t,
                      int64_t lo = std::numeric_limits<int64_t>::min(),
                      int64_t hi = std::numeric_limits<int64_t>::max());

}  // namespace ember
