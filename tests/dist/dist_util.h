// Helpers of the multi-process tests (tests/dist): every rank runs the same tests in the same
// order, so each collective meets its peers; values come from a formula of (rank, index) so that
// each rank knows what every other rank holds.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "ember/dist/dist.h"
#include "test_util.h"

namespace ember::test::dist_util {

/// Rank r's value at flat index i: small integers (sums over 3 ranks fit i8), 0/1 for bool.
inline double value(int r, int64_t i, DType dtype) {
  if (dtype == DType::b8) return (i + r) % 3 == 0 ? 1 : 0;
  return double((i * 3 + r * 5 + 1) % 11);
}

/// Rank r's tensor of `shape` on `device`, flat indices from `base`.
inline Tensor make(int r, Shape shape, DType dtype, const Device& device, int64_t base = 0) {
  std::vector<double> v(size_t(numel_of(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = value(r, base + int64_t(i), dtype);
  return from_vector<double>(v, shape, Device::ref()).to(dtype).to(device);
}

/// The op over ranks of value(r, base + i), i < n (bool: sum and max are or, min is and).
inline std::vector<double> reduced(dist::ReduceOp op, int64_t n, DType dtype, int64_t base = 0) {
  const int world = dist::world_size();
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double acc = value(0, base + i, dtype);
    for (int r = 1; r < world; ++r) {
      const double v = value(r, base + i, dtype);
      if (op == dist::ReduceOp::max)
        acc = std::max(acc, v);
      else if (op == dist::ReduceOp::min)
        acc = std::min(acc, v);
      else
        acc += v;
    }
    if (op == dist::ReduceOp::mean) acc /= world;
    if (dtype == DType::b8) acc = acc != 0;
    out[size_t(i)] = acc;
  }
  return out;
}

/// `got` (any device, dtype) equals `want` up to one rounding of the dtype.
inline void expect_values(const Tensor& got, const std::vector<double>& want,
                          const std::string& what) {
  const std::vector<double> g = got.to(Device::ref()).to_vector<double>();
  ASSERT_EQ(g.size(), want.size()) << what;
  const DType t = got.dtype();
  const double rel = t == DType::f16    ? 1e-3
                     : t == DType::bf16 ? 8e-3
                     : t == DType::f32  ? 1e-6
                                        : 1e-12;
  int bad = 0;
  for (size_t i = 0; i < g.size() && bad < 5; ++i) {
    const double tol = is_floating(t) ? rel * std::abs(want[i]) : 0;
    if (std::abs(g[i] - want[i]) > tol) {
      ++bad;
      ADD_FAILURE() << what << ": at " << i << " got " << g[i] << ", want " << want[i] << " (rank "
                    << dist::rank() << " of " << dist::world_size() << ")";
    }
  }
}

/// ref, cpu and every GPU device of this machine (the same list on every rank).
inline std::vector<Device> devices() {
  std::vector<Device> out{Device::ref(), Device::cpu()};
  for (const Device& d : gpu_devices()) out.push_back(d);
  return out;
}

/// The environment variable's value, or `def` when unset.
inline std::string env(const char* name, const char* def = "") {
  const char* v = std::getenv(name);
  return v ? v : def;
}

inline std::string label(const Device& d, DType t, int64_t n) {
  return d.str() + " " + dtype_name(t) + " [" + std::to_string(n) + "]";
}

}  // namespace ember::test::dist_util
