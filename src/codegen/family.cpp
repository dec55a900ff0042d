#include "codegen/family.h"

#include <cmath>
#include <limits>
#include <utility>

#include "ember/error.h"

namespace ember::codegen {

void require_index(const char* op, const Caps& caps) {
  if (!caps.i64) EMBER_FAIL(op, "i64 indices need shaderInt64, which this device lacks");
}

void check_fits(const char* op, const std::vector<Tensor>& ts) {
  for (const Tensor& t : ts) {
    if (!t.defined() || t.numel() == 0) continue;
    int64_t lo = t.offset(), hi = t.offset();
    for (int64_t k = 0; k < t.dim(); ++k) {
      const int64_t span = (t.size(k) - 1) * t.stride(k);
      (span < 0 ? lo : hi) += span;
    }
    EMBER_CHECK(lo >= 0 && hi <= int64_t(std::numeric_limits<int32_t>::max()), op,
                "a view spanning elements [", lo, ", ", hi,
                "] exceeds the 32-bit indexing of GPU kernels");
  }
}

bool is_float_dtype(DType t) {
  return t == DType::f32 || t == DType::f64 || t == DType::f16 || t == DType::bf16;
}

bool is_unsigned_dtype(DType t) {
  return t == DType::u8 || t == DType::u16 || t == DType::u32 || t == DType::u64;
}

using kir::Expr;
using kir::Type;

Type ctype_of(DType t) { return t == DType::b8 ? Type::u32 : kir::compute_of(t); }

Expr ccast(DType t, Expr e) { return kir::cast(ctype_of(t), std::move(e)); }

Expr ld(kir::Kernel& k, kir::Buf b, Expr index) {
  const DType t = k.buffers()[size_t(b.id)].dtype;
  return ccast(t, k.load(b, std::move(index)));
}

void st(kir::Kernel& k, kir::Buf b, Expr index, Expr v) {
  const DType t = k.buffers()[size_t(b.id)].dtype;
  k.store(b, std::move(index), t == DType::b8 ? v != 0 : std::move(v));
}

Expr lowest_value(DType t) {
  switch (t) {
    case DType::i8:
      return kir::lit_int(Type::i32, -128);
    case DType::i16:
      return kir::lit_int(Type::i32, -32768);
    case DType::i32:
      return kir::lit_int(Type::i32, std::numeric_limits<int32_t>::lowest());
    case DType::i64:
      return kir::lit_int(Type::i64, std::numeric_limits<int64_t>::lowest());
    case DType::u64:
      return kir::lit_uint(Type::u64, 0);
    default:
      return kir::lit_uint(Type::u32, 0);
  }
}

Expr highest_value(DType t) {
  switch (t) {
    case DType::i8:
      return kir::lit_int(Type::i32, 127);
    case DType::i16:
      return kir::lit_int(Type::i32, 32767);
    case DType::i32:
      return kir::lit_int(Type::i32, std::numeric_limits<int32_t>::max());
    case DType::i64:
      return kir::lit_int(Type::i64, std::numeric_limits<int64_t>::max());
    case DType::u8:
      return kir::lit_uint(Type::u32, 255);
    case DType::u16:
      return kir::lit_uint(Type::u32, 65535);
    case DType::u32:
      return kir::lit_uint(Type::u32, std::numeric_limits<uint32_t>::max());
    case DType::u64:
      return kir::lit_uint(Type::u64, std::numeric_limits<uint64_t>::max());
    default:
      return kir::lit_uint(Type::u32, 1);
  }
}

Expr param_u(size_t k) { return kir::param_u32(uint32_t(k)); }
Expr param_i(size_t k) { return kir::param_i32(uint32_t(k)); }
Expr param_f(size_t k) { return kir::param_f32(uint32_t(k)); }
Expr param_d(size_t k) { return kir::param_f64(uint32_t(k)); }

size_t ParamBuilder::u(int64_t v) {
  EMBER_CHECK(v >= 0 && v <= int64_t(std::numeric_limits<uint32_t>::max()), op_, "size ", v,
              " does not fit the 32-bit indexing of GPU kernels");
  return u32(uint32_t(v));
}

size_t ParamBuilder::i(int64_t v) { return i32(v, op_); }

size_t ParamBuilder::ints(const std::vector<int64_t>& v) {
  const size_t at = words().size();
  for (int64_t x : v) i(x);
  return at;
}

namespace {

// The ref's cast of a scalar to integer type T (float: NaN -> 0, saturated, truncated).
template <typename T>
T int_cast(const Scalar& s) {
  if (!s.is_float()) return T(s.to_int());
  const double v = s.to_double();
  if (std::isnan(v)) return T(0);
  if (v <= double(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
  if (v >= double(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return T(v);
}

}  // namespace

size_t ParamBuilder::scalar(DType t, const Scalar& s) {
  const bool fl = s.is_float();
  switch (t) {
    case DType::f32:
    case DType::f16:
    case DType::bf16:
      return f(fl ? float(s.to_double()) : float(s.to_int()));
    case DType::f64:
      return d(fl ? s.to_double() : double(s.to_int()));
    case DType::i8:
      return i(int_cast<int8_t>(s));
    case DType::i16:
      return i(int_cast<int16_t>(s));
    case DType::i32:
      return i(int_cast<int32_t>(s));
    case DType::u8:
      return u(int_cast<uint8_t>(s));
    case DType::u16:
      return u(int_cast<uint16_t>(s));
    case DType::u32:
      return u(int_cast<uint32_t>(s));
    case DType::i64:
      return u64(uint64_t(int_cast<int64_t>(s)));
    case DType::u64:
      return u64(int_cast<uint64_t>(s));
    case DType::b8:
      return u(fl ? s.to_double() != 0 : s.to_int() != 0);
  }
  return f(0);
}

Expr scalar_param(DType t, size_t k) {
  switch (t) {
    case DType::f32:
    case DType::f16:
    case DType::bf16:
      return param_f(k);
    case DType::f64:
      return param_d(k);
    case DType::i8:
    case DType::i16:
    case DType::i32:
      return param_i(k);
    case DType::i64:
      return kir::cast(Type::i64, kir::param_u64(uint32_t(k)));
    case DType::u64:
      return kir::param_u64(uint32_t(k));
    default:
      return param_u(k);
  }
}

std::vector<Expr> decompose(kir::Kernel& k, Expr lin, int rank, size_t sizes_at,
                            const std::vector<Operand>& ops) {
  const Expr rem = k.let("rem", std::move(lin));
  std::vector<Expr> offs;
  for (const Operand& o : ops) offs.push_back(k.let(o.name, param_i(o.off_at)));
  for (int d = rank - 1; d >= 0; --d) {
    const Expr size = param_u(sizes_at + size_t(d));
    std::string name = "c";  // (built piecewise: GCC 12 warns falsely on "c" + std::to_string(d))
    name += std::to_string(d);
    const Expr c = k.let(name, d > 0 ? rem % size : rem);
    if (d > 0) k.assign(rem, rem / size);
    for (size_t j = 0; j < ops.size(); ++j)
      k.assign(offs[j], offs[j] + kir::cast(Type::i32, c) * param_i(ops[j].strides_at + size_t(d)));
  }
  return offs;
}

}  // namespace ember::codegen
