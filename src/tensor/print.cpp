// PyTorch-style printing: tensor([[1., 2.], [3., 4.]]), summarised past 1000 elements.
#include <cmath>
#include <cstdio>
#include <sstream>

#include "tensor/internal.h"

namespace ember {

namespace {

struct Printer {
  std::vector<double> vals;
  Shape shape;
  Strides st;
  bool floating, boolean, summarise, int_valued = true, sci = false;
  int width = 1;

  std::string fmt(double v) const {
    char buf[64];
    if (boolean) return v != 0 ? "True" : "False";
    if (!floating) {
      std::snprintf(buf, sizeof buf, "%lld", (long long)v);
    } else if (std::isnan(v)) {
      return "nan";
    } else if (std::isinf(v)) {
      return v > 0 ? "inf" : "-inf";
    } else if (sci) {
      std::snprintf(buf, sizeof buf, "%.4e", v);
    } else if (int_valued) {
      std::snprintf(buf, sizeof buf, "%.0f.", v);
    } else {
      std::snprintf(buf, sizeof buf, "%.4f", v);
    }
    return buf;
  }

  void rec(std::ostringstream& os, size_t d, int64_t off, int indent) const {
    if (d == shape.size()) {
      std::string s = fmt(vals[size_t(off)]);
      os << std::string(size_t(std::max<int>(0, width - int(s.size()))), ' ') << s;
      return;
    }
    os << '[';
    const int64_t n = shape[d];
    const bool cut = summarise && n > 6;
    for (int64_t i = 0; i < n; ++i) {
      if (cut && i == 3) {
        os << (d + 1 == shape.size() ? "..., " : "...,\n" + std::string(size_t(indent + 1), ' '));
        i = n - 3;
      }
      rec(os, d + 1, off + i * st[d], indent + 1);
      if (i + 1 < n) {
        if (d + 1 == shape.size()) {
          os << ", ";
        } else {
          os << ',' << std::string(shape.size() - d - 1, '\n')
             << std::string(size_t(indent + 1), ' ');
        }
      }
    }
    os << ']';
  }
};

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  Printer p;
  p.shape = shape();
  p.st = contiguous_strides(p.shape);
  p.vals = to_vector<double>();
  p.floating = is_floating(dtype());
  p.boolean = is_bool(dtype());
  p.summarise = numel() > 1000;
  double maxabs = 0, minabs = INFINITY;
  for (double v : p.vals) {
    if (!std::isfinite(v)) continue;
    if (v != std::floor(v)) p.int_valued = false;
    maxabs = std::max(maxabs, std::fabs(v));
    if (v != 0) minabs = std::min(minabs, std::fabs(v));
  }
  if (p.floating && !p.int_valued && (maxabs >= 1e8 || minabs < 1e-4)) p.sci = true;
  if (p.floating && p.int_valued && maxabs >= 1e8) p.sci = true;
  for (double v : p.vals) p.width = std::max<int>(p.width, int(p.fmt(v).size()));
  std::ostringstream os;
  os << "tensor(";
  if (numel() == 0) {
    os << "[]";
  } else {
    p.rec(os, 0, 0, 7);
  }
  const bool default_dtype = dtype() == DType::f32 || dtype() == DType::i64 || dtype() == DType::b8;
  if (numel() == 0 && dim() != 1) os << ", size=" << shape_str(shape());
  if (!default_dtype) os << ", dtype=" << dtype_name(dtype());
  if (device() != Device::cpu()) os << ", device='" << device().str() << "'";
  os << ')';
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace ember
