// Helpers for the multi-process tests of nn::DistributedDataParallel and DistributedSampler:
// deterministic host data, gathering values from every rank, comparing tensors.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "ember/dist/dist.h"
#include "ember/ember.h"

namespace ember::test {

/// N(0, 1) values from std::mt19937(seed): the same on every rank and every device.
inline Tensor host_randn(Shape shape, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> nd;
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = nd(gen);
  return from_vector<float>(v, std::move(shape), Device::cpu());
}

/// Class labels in [0, classes) from std::mt19937(seed).
inline Tensor host_labels(int64_t n, int64_t classes, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t& x : v) x = int64_t(gen() % uint32_t(classes));
  return from_vector<int64_t>(v, {n}, Device::cpu());
}

/// The tensors' values, flattened one after the other, as f32.
inline std::vector<float> values(const std::vector<Tensor>& ts) {
  std::vector<float> out;
  for (const Tensor& t : ts) {
    const std::vector<float> v = t.to(DType::f32).to_vector<float>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

/// Every rank's `v` (all ranks pass vectors of one length), in rank order.
template <typename T>
std::vector<std::vector<T>> gather_all(const std::vector<T>& v) {
  const int world = dist::world_size();
  const Tensor mine = from_vector<T>(v, {int64_t(v.size())}, Device::cpu());
  std::vector<Tensor> all;
  for (int r = 0; r < world; ++r) all.push_back(zeros({int64_t(v.size())}, mine.dtype()));
  dist::all_gather(all, mine);
  std::vector<std::vector<T>> out;
  for (const Tensor& t : all) out.push_back(t.to_vector<T>());
  return out;
}

/// Largest |a - b| / (atol + rtol |b|) over the elements (<= 1: within tolerance).
inline double worst(const std::vector<float>& a, const std::vector<float>& b, double atol,
                    double rtol) {
  EXPECT_EQ(a.size(), b.size());
  double w = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    w = std::max(w, std::abs(double(a[i]) - double(b[i])) / (atol + rtol * std::abs(double(b[i]))));
  return w;
}

/// A copy of `src`'s parameters and buffers in `dst` (a module of the same structure).
inline void copy_into(nn::Module& dst, const nn::Module& src) {
  nn::StateDict d;
  for (const auto& [k, v] : src.state_dict()) d.set(k, v.clone());
  dst.load_state_dict(d);
}

}  // namespace ember::test
