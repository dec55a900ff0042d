// A WGAN-GP critic step against PyTorch 1.13: tests/golden/make_wgan_gp.py writes
// tests/data/golden/wgan_gp.json (fixed critic weights, real/fake batches, alpha, the gradient
// penalty, the loss and every parameter's gradient). The penalty differentiates the critic's
// input gradient, so the parameter gradients go through create_graph's recorded backward (conv,
// leaky_relu, matmul, norm). Run in f64 (cpu and ref: composite conv) and in f32 on cpu, where
// the convolution is the fused oneDNN op and its create_graph backward takes the composite.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "ember/autograd.h"
#include "ember/ember.h"

using json = nlohmann::json;

namespace ember {
namespace {

namespace F = nn::functional;

Tensor from_json(const json& j, DType dt, const Device& dev) {
  return from_vector<double>(j["data"].get<std::vector<double>>(),
                             j["shape"].get<std::vector<int64_t>>())
      .to(dt)
      .to(dev);
}

std::vector<double> vec(const Tensor& t) { return t.detach().contiguous().to_vector<double>(); }

Tensor critic(const Tensor& x, const std::vector<Tensor>& p) {
  const Tensor h = F::leaky_relu(F::conv2d(x, p[0], p[1], {1}, {1}), 0.2);
  return matmul(h.flatten(1), p[2].t()) + p[3];
}

void run_step(DType dt, const Device& dev, double rtol) {
  SCOPED_TRACE(std::string(dtype_name(dt)) + " on " + dev.str());
  std::ifstream f(std::string(EMBER_TEST_DATA_DIR) + "/golden/wgan_gp.json");
  ASSERT_TRUE(f.good()) << "missing tests/data/golden/wgan_gp.json";
  const json j = json::parse(f);
  const char* names[] = {"w1", "b1", "w2", "b2"};
  std::vector<Tensor> p;
  for (const char* n : names) p.push_back(from_json(j["params"][n], dt, dev).requires_grad_());
  const Tensor real = from_json(j["real"], dt, dev), fake = from_json(j["fake"], dt, dev);
  const Tensor alpha = from_json(j["alpha"], dt, dev);
  const double lambda = j["lambda"].get<double>();
  const int64_t b = real.size(0);

  Tensor interp = (alpha * real + (1 - alpha) * fake).requires_grad_();
  const Tensor g =
      autograd::grad({critic(interp, p).sum()}, {interp}, {}, std::nullopt, false, true)[0];
  ASSERT_TRUE(g.requires_grad());
  const Tensor gn = norm(g.reshape({b, -1}), 2.0, {1});
  const Tensor penalty = mean((gn - 1) * (gn - 1)) * lambda;
  const Tensor loss = mean(critic(fake, p)) - mean(critic(real, p)) + penalty;
  loss.backward();

  auto near = [&](double a, double e, const std::string& what) {
    EXPECT_LE(std::abs(a - e), rtol * (1 + std::abs(e))) << what << ": " << a << " vs " << e;
  };
  near(penalty.item<double>(), j["penalty"].get<double>(), "penalty");
  near(loss.item<double>(), j["loss"].get<double>(), "loss");
  const std::vector<double> gv = vec(g), ge = j["input_grad"]["data"].get<std::vector<double>>();
  ASSERT_EQ(gv.size(), ge.size());
  for (size_t i = 0; i < gv.size(); ++i) near(gv[i], ge[i], "input grad " + std::to_string(i));
  for (size_t k = 0; k < p.size(); ++k) {
    ASSERT_TRUE(p[k].grad().defined()) << names[k];
    const std::vector<double> a = vec(p[k].grad());
    const std::vector<double> e = j["grads"][names[k]]["data"].get<std::vector<double>>();
    ASSERT_EQ(a.size(), e.size()) << names[k];
    for (size_t i = 0; i < a.size(); ++i)
      near(a[i], e[i], std::string("d loss / d ") + names[k] + " element " + std::to_string(i));
  }
}

TEST(HigherOrderGoldenTest, WganGpStepMatchesTorch) {
  run_step(DType::f64, Device::cpu(), 1e-9);
  run_step(DType::f64, Device::ref(), 1e-9);
  run_step(DType::f32, Device::cpu(), 1e-4);  // the fused convolution
}

}  // namespace
}  // namespace ember
