// common.h's kir helpers: ref cast semantics, strided offsets and Iter offsets.
#include <cstring>
#include <string>

#include "codegen/common.h"

namespace ember::codegen {

using kir::Expr;
using kir::Type;

namespace {

bool narrow_int(DType t) {
  return t == DType::i8 || t == DType::i16 || t == DType::u8 || t == DType::u16;
}

// ember_sat_<to>_<from>: saturating, NaN -> 0, truncating float -> integer (ref::cast).
Expr saturate(kir::Kernel& k, DType from, DType to, Expr v) {
  const Type ft = kir::compute_of(from), tt = kir::compute_of(to);
  double lo = 0, hi = 0;
  int64_t lo_i = 0;
  uint64_t hi_u = 0;
  switch (to) {
    case DType::i8:
      lo = -128, hi = 127, lo_i = -128, hi_u = 127;
      break;
    case DType::i16:
      lo = -32768, hi = 32767, lo_i = -32768, hi_u = 32767;
      break;
    case DType::i32:
      lo = -2147483648.0, hi = 2147483647.0, lo_i = INT32_MIN, hi_u = INT32_MAX;
      break;
    case DType::i64:
      lo = -9223372036854775808.0, hi = 9223372036854775807.0, lo_i = INT64_MIN, hi_u = INT64_MAX;
      break;
    case DType::u8:
      hi = 255, hi_u = 255;
      break;
    case DType::u16:
      hi = 65535, hi_u = 65535;
      break;
    case DType::u32:
      hi = 4294967295.0, hi_u = UINT32_MAX;
      break;
    default:  // u64
      hi = 18446744073709551615.0, hi_u = UINT64_MAX;
      break;
  }
  const std::string name =
      std::string("ember_sat_") + dtype_tag(to) + "_" + (ft == Type::f64 ? "f64" : "f32");
  kir::Function f = k.function(name, tt, {ft}, [&](const std::vector<Expr>& a) {
    const Expr x = a[0];
    const Expr lo_v = kir::is_signed(tt) ? kir::lit_int(tt, lo_i) : kir::lit_uint(tt, 0);
    k.ret(
        select(kir::call(kir::Fn::isnan, {x}), kir::lit_int(tt, 0),
               select(x <= lo, lo_v, select(x >= hi, kir::lit_uint(tt, hi_u), kir::cast(tt, x)))));
  });
  return k.call(f, {std::move(v)});
}

}  // namespace

Expr convert(kir::Kernel& k, DType from, DType to, Expr v) {
  const Type ft = kir::compute_of(from), tt = kir::compute_of(to);
  if (ft == tt && !narrow_int(to)) return v;
  if (to == DType::b8) return v != 0;
  if (from == DType::b8) return select(v, kir::lit(tt, 1), kir::lit(tt, 0));
  if (is_floating(to)) return kir::cast(tt, v);
  if (is_floating(from)) return saturate(k, from, to, v);
  if (narrow_int(to)) return kir::cast(tt, kir::cast(kir::storage_of(to), v));  // wraps as C++
  return kir::cast(tt, v);
}

Expr offset_of(kir::Kernel& k, const std::string& var, Expr lin, int rank, uint32_t base) {
  Expr off = k.let(var, kir::param_i32(base));
  if (rank == 0) return off;
  Expr r = k.let(var + "_r", lin);
  for (int d = rank - 1; d >= 0; --d) {
    const Expr size = kir::param_u32(base + 1 + uint32_t(d));
    const Expr stride = kir::param_i32(base + 1 + uint32_t(rank + d));
    if (d == 0) {
      k.assign(off, off + kir::cast(Type::i32, r) * stride);
    } else {
      k.assign(off, off + kir::cast(Type::i32, r % size) * stride);
      k.assign(r, r / size);
    }
  }
  return off;
}

std::vector<Expr> iter_offsets(kir::Kernel& k, const std::vector<std::string>& vars, Expr lin,
                               int rank, uint32_t base) {
  const int n = int(vars.size());
  const uint32_t divs = base + 1 + uint32_t(rank);  // FastDiv of sizes[d] at divs + 2 (d - 1)
  auto off_word = [&](int o) {
    return divs + 2 * uint32_t(rank > 0 ? rank - 1 : 0) + uint32_t(o) * (rank + 1);
  };
  std::vector<Expr> offs;
  for (int o = 0; o < n; ++o) offs.push_back(k.let(vars[size_t(o)], kir::param_i32(off_word(o))));
  if (rank == 0) return offs;
  Expr r = k.let("ember_r", lin);
  for (int d = rank - 1; d >= 0; --d) {
    const Expr size = kir::param_u32(base + 1 + uint32_t(d));
    Expr c = r;
    if (d > 0) {
      const uint32_t w = divs + 2 * uint32_t(d - 1);
      const Expr q =
          k.let("ember_q" + std::to_string(d),
                (kir::call(kir::Fn::mul_hi, {r, kir::param_u32(w)}) + r) >> kir::param_u32(w + 1));
      c = k.let("ember_c" + std::to_string(d), r - q * size);
      k.assign(r, q);
    }
    for (int o = 0; o < n; ++o)
      k.assign(offs[size_t(o)],
               offs[size_t(o)] +
                   kir::cast(Type::i32, c) * kir::param_i32(off_word(o) + 1 + uint32_t(d)));
  }
  return offs;
}

}  // namespace ember::codegen
