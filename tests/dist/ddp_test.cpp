// nn::DistributedDataParallel across the ranks of the default group (mpirun -np 2 and 3; one
// process: the local group): N steps of W ranks x batch B equal N steps of one model on the
// W*B batch, no_sync accumulation, the start-up broadcast and model check, unused parameters,
// buffers, and parameters of several dtypes.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "dist_test_util.h"
#include "dist_util.h"
#include "ember/dist/dist.h"
#include "ember/ember.h"
#include "ember/nn/parallel/distributed.h"

using namespace ember;
using namespace ember::test;
using nn::DistributedDataParallel;
using nn::DistributedDataParallelOptions;

namespace {

// Bucket caps small enough that these models have several buckets.
constexpr double kSmallBucketsMb = 0.0002;  // about 200 bytes

int world() { return dist::world_size(); }
int rank() { return dist::rank(); }

std::shared_ptr<nn::Sequential> small_cnn() {
  return nn::make_sequential(std::make_shared<nn::Conv2d>(1, 4, 3), std::make_shared<nn::ReLU>(),
                             std::make_shared<nn::Flatten>(),
                             std::make_shared<nn::Linear>(4 * 6 * 6, 5));
}

std::shared_ptr<nn::Sequential> mlp(int64_t out = 4) {
  return nn::make_sequential(std::make_shared<nn::Linear>(6, 16), std::make_shared<nn::Tanh>(),
                             std::make_shared<nn::Linear>(16, out));
}

// fc1, then fc2 only when use_fc2 (for unused parameters).
struct TwoLayers : nn::UnaryModule {
  std::shared_ptr<nn::Linear> fc1, fc2;
  bool use_fc2 = true;
  TwoLayers() : UnaryModule("TwoLayers") {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(6, 3));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(3, 3));
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = (*fc1)(x);
    return use_fc2 ? (*fc2)(h) : h;
  }
};

// An f32 layer then a bf16 one: buckets per dtype, gradients reduced in each dtype.
struct MixedPrecision : nn::UnaryModule {
  std::shared_ptr<nn::Linear> fc1, fc2;
  MixedPrecision() : UnaryModule("MixedPrecision") {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(6, 8));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(8, 4));
    fc2->to(DType::bf16);
  }
  Tensor forward(const Tensor& x) override {
    return (*fc2)((*fc1)(x).relu().to(DType::bf16)).to(DType::f32);
  }
};

std::vector<Tensor> grads(const nn::Module& m) {
  std::vector<Tensor> g;
  for (const Tensor& p : m.parameters()) g.push_back(p.grad());
  return g;
}

// This rank's rows [rank * b, (rank + 1) * b) of a batch of world * b rows.
Tensor shard(const Tensor& full, int64_t b) { return full.narrow(0, rank() * b, b); }

// The average over the ranks of each rank's `v`, in f32.
std::vector<float> mean_over_ranks(const std::vector<float>& v) {
  std::vector<float> mean(v.size(), 0.f);
  for (const auto& r : gather_all(v))
    for (size_t i = 0; i < r.size(); ++i) mean[i] += r[i] / float(world());
  return mean;
}

// Whether every rank holds the same values (within f32 noise).
void expect_same_on_all_ranks(const std::vector<float>& v, const char* what) {
  const auto all = gather_all(v);
  for (int r = 1; r < world(); ++r)
    EXPECT_LE(worst(all[size_t(r)], all[0], 1e-7, 1e-6), 1.0) << what << ": rank " << r;
}

template <typename MakeOpt>
void expect_equivalent(std::shared_ptr<nn::Module> model, std::shared_ptr<nn::Module> ref,
                       const Shape& sample, int64_t classes, MakeOpt make_opt, bool regression) {
  const int64_t b = 4, steps = 5;
  auto ddp = std::make_shared<DistributedDataParallel>(
      model, DistributedDataParallelOptions{.bucket_cap_mb = kSmallBucketsMb});
  EXPECT_GE(ddp->bucket_bytes().size(), 2u);
  copy_into(*ref, *model);  // rank 0's initial values, as DDP broadcast them
  auto opt = make_opt(model->parameters());
  auto ref_opt = make_opt(ref->parameters());
  auto* unary_ref = dynamic_cast<nn::UnaryModule*>(ref.get());
  for (int64_t s = 0; s < steps; ++s) {
    Shape shape = sample;
    shape.insert(shape.begin(), world() * b);
    const Tensor x = host_randn(shape, uint32_t(100 + s));
    const Tensor y = regression ? host_randn({world() * b, classes}, uint32_t(200 + s))
                                : host_labels(world() * b, classes, uint32_t(200 + s));
    auto loss = [&](const Tensor& out, const Tensor& t) {
      return regression ? nn::functional::mse_loss(out, t) : nn::functional::cross_entropy(out, t);
    };
    loss((*ddp)(shard(x, b)), shard(y, b)).backward();
    opt->step();
    opt->zero_grad();
    loss((*unary_ref)(x), y).backward();
    ref_opt->step();
    ref_opt->zero_grad();
  }
  EXPECT_LE(worst(values(model->parameters()), values(ref->parameters()), 1e-5, 1e-4), 1.0)
      << "rank " << rank() << " of " << world();
  expect_same_on_all_ranks(values(model->parameters()), "parameters");
}

}  // namespace

TEST(DistributedDataParallelTest, CnnSgdMatchesOneProcessOnTheWholeBatch) {
  manual_seed(uint64_t(10 + rank()));  // each rank starts elsewhere; DDP copies rank 0's
  auto model = small_cnn();
  auto ref = small_cnn();
  expect_equivalent(
      model, ref, {1, 8, 8}, 5,
      [](std::vector<Tensor> p) {
        return std::make_unique<optim::SGD>(p, optim::SGDOptions(0.1).momentum(0.9));
      },
      false);
}

TEST(DistributedDataParallelTest, MlpAdamMatchesOneProcessOnTheWholeBatch) {
  manual_seed(uint64_t(20 + rank()));
  auto model = mlp();
  auto ref = mlp();
  expect_equivalent(
      model, ref, {6}, 4,
      [](std::vector<Tensor> p) {
        return std::make_unique<optim::Adam>(p, optim::AdamOptions(1e-2));
      },
      true);
}

TEST(DistributedDataParallelTest, NoSyncAccumulatesLocallyThenAverages) {
  manual_seed(30);
  auto model = mlp();
  DistributedDataParallel ddp(model, {.bucket_cap_mb = kSmallBucketsMb});
  auto local = mlp();  // this rank's data only
  auto full = mlp();   // every rank's data
  copy_into(*local, *model);
  copy_into(*full, *model);
  const int64_t b = 3, micro = 3;
  for (int64_t m = 0; m < micro; ++m) {
    const Tensor x = host_randn({world() * b, 6}, uint32_t(300 + m));
    const Tensor y = host_randn({world() * b, 4}, uint32_t(400 + m));
    const bool last = m == micro - 1;
    auto step = [&] { nn::functional::mse_loss(ddp(shard(x, b)), shard(y, b)).backward(); };
    if (last) {
      step();
    } else {
      auto guard = ddp.no_sync();
      EXPECT_FALSE(ddp.require_backward_grad_sync());
      step();
    }
    EXPECT_TRUE(ddp.require_backward_grad_sync());
    nn::functional::mse_loss((*local)(shard(x, b)), shard(y, b)).backward();
    nn::functional::mse_loss((*full)(x), y).backward();
    if (!last) {  // inside no_sync: this rank's own accumulated gradients
      EXPECT_LE(worst(values(grads(*model)), values(grads(*local)), 1e-6, 1e-5), 1.0);
    }
  }
  // The synced backward averaged the sums over the micro-batches: the whole batch's gradient.
  EXPECT_LE(worst(values(grads(*model)), values(grads(*full)), 1e-5, 1e-4), 1.0);
  expect_same_on_all_ranks(values(grads(*model)), "gradients");
}

TEST(DistributedDataParallelTest, ConstructionBroadcastsRankZerosParameters) {
  manual_seed(uint64_t(40 + rank()));
  auto model = small_cnn();
  const auto before = gather_all(values(model->parameters()));
  if (world() > 1) {
    EXPECT_NE(before[0], before[1]) << "ranks start from different values";
  }
  DistributedDataParallel ddp(model);
  const auto after = gather_all(values(model->parameters()));
  for (int r = 0; r < world(); ++r) EXPECT_EQ(after[size_t(r)], before[0]) << "rank " << r;
  // The wrapper's own view: the module is its child "module" (torch's state_dict keys).
  EXPECT_TRUE(ddp.state_dict().contains("module.0.weight"));
  EXPECT_EQ(ddp.module_ptr(), model);
}

TEST(DistributedDataParallelTest, DifferentModelsThrowOnEveryRank) {
  if (world() < 2) GTEST_SKIP() << "needs 2 ranks";
  // Rank 1's layer 2 has 5 outputs, the others 3: every rank names the parameter and shapes.
  auto model = mlp(rank() == 1 ? 5 : 3);
  try {
    DistributedDataParallel ddp(model);
    ADD_FAILURE() << "expected an error on rank " << rank();
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const char* part :
         {"[DistributedDataParallel]", "'2.weight'", "[3, 16] on rank 0", "[5, 16] on rank 1"})
      EXPECT_NE(msg.find(part), std::string::npos) << msg;
  }
  // A parameter that only rank 1 has.
  auto extra = nn::make_sequential(std::make_shared<nn::Linear>(2, 2));
  if (rank() == 1) extra->push_back(std::make_shared<nn::Linear>(2, 2));
  try {
    DistributedDataParallel ddp(extra);
    ADD_FAILURE() << "expected an error on rank " << rank();
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const char* part : {"'1.weight'", "nothing on rank 0", "on rank 1"})
      EXPECT_NE(msg.find(part), std::string::npos) << msg;
  }
  // The group is still in step: a matching model works.
  auto same = mlp();
  DistributedDataParallel ok(same);
  EXPECT_FALSE(ok.bucket_bytes().empty());
}

TEST(DistributedDataParallelTest, UnusedParametersNeedFindUnusedParameters) {
  manual_seed(50);
  auto model = std::make_shared<TwoLayers>();
  DistributedDataParallel ddp(model);
  const Tensor x = host_randn({2, 6}, uint32_t(500 + rank()));
  model->use_fc2 = false;
  try {
    ddp(x).sum().backward();
    ADD_FAILURE() << "expected an error for the unused fc2";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const char* part :
         {"[DistributedDataParallel]", "'fc2.weight'", "no gradient", "find_unused_parameters"})
      EXPECT_NE(msg.find(part), std::string::npos) << msg;
  }
  // The next backward that uses every parameter works and averages.
  model->zero_grad();
  model->use_fc2 = true;
  ddp(x).sum().backward();
  expect_same_on_all_ranks(values(grads(*model)), "gradients after the error");
}

TEST(DistributedDataParallelTest, FindUnusedParametersCountsThemAsZero) {
  manual_seed(60);
  auto model = std::make_shared<TwoLayers>();
  DistributedDataParallel ddp(model, {.find_unused_parameters = true});
  auto local = std::make_shared<TwoLayers>();
  copy_into(*local, *model);
  // fc2 is used on rank 0 only: every rank gets rank 0's fc2 gradient / world.
  model->use_fc2 = local->use_fc2 = rank() == 0;
  const Tensor x = host_randn({2, 6}, uint32_t(600 + rank()));
  ddp(x).sum().backward();
  (*local)(x).sum().backward();
  // (Checks that fail still make every collective, so the other ranks do not wait.)
  const bool defined = model->fc2->weight.grad().defined() && model->fc2->bias.grad().defined();
  EXPECT_TRUE(defined) << "rank " << rank();
  const auto fc2 = defined ? values({model->fc2->weight.grad(), model->fc2->bias.grad()})
                           : std::vector<float>(3 * 3 + 3, 0.f);
  expect_same_on_all_ranks(fc2, "fc2's gradient");
  if (rank() == 0) {
    std::vector<float> want = values({local->fc2->weight.grad(), local->fc2->bias.grad()});
    for (float& v : want) v /= float(world());
    EXPECT_LE(worst(fc2, want, 1e-6, 1e-5), 1.0);
  }
  expect_same_on_all_ranks(values({model->fc1->weight.grad()}), "fc1's gradient");
  // Unused on every rank: .grad stays undefined (optimizers skip it).
  model->zero_grad();
  model->use_fc2 = false;
  ddp(x).sum().backward();
  EXPECT_FALSE(model->fc2->weight.grad().defined());
  EXPECT_TRUE(model->fc1->weight.grad().defined());
}

TEST(DistributedDataParallelTest, TrainingForwardTakesRankZerosBuffers) {
  manual_seed(70);
  auto model = nn::make_sequential(std::make_shared<nn::Conv2d>(1, 2, 3),
                                   std::make_shared<nn::BatchNorm2d>(2));
  DistributedDataParallel ddp(model);
  auto buffers = [&] { return values(model->buffers()); };  // running stats and the count
  const Tensor own = host_randn({3, 1, 6, 6}, uint32_t(700 + rank()));
  const Tensor common = host_randn({3, 1, 6, 6}, 701);
  ddp(own);  // each rank's statistics move with its own batch
  const auto after_own = gather_all(buffers());
  if (world() > 1) {
    EXPECT_NE(after_own[0], after_own[1]);
  }
  // Before this forward every rank takes rank 0's statistics, then updates them alike.
  ddp(common);
  expect_same_on_all_ranks(buffers(), "buffers after a training forward");
  // Not in eval mode, and not without broadcast_buffers.
  ddp(own);
  model->eval();
  ddp(own);
  const auto eval_after = gather_all(buffers());
  if (world() > 1) {
    EXPECT_NE(eval_after[0], eval_after[1]);
  }
  ddp.broadcast_buffers();  // by hand
  expect_same_on_all_ranks(buffers(), "buffers after broadcast_buffers()");
  model->train();
  auto model2 = nn::make_sequential(std::make_shared<nn::BatchNorm2d>(1));
  DistributedDataParallel no_bcast(model2, {.broadcast_buffers = false});
  no_bcast(own);
  no_bcast(common);
  const auto kept = gather_all(values(model2->buffers()));
  if (world() > 1) {
    EXPECT_NE(kept[0], kept[1]);
  }
}

TEST(DistributedDataParallelTest, MixedDtypesAverageInEachDtype) {
  manual_seed(80);
  auto model = std::make_shared<MixedPrecision>();
  DistributedDataParallel ddp(model);
  EXPECT_EQ(ddp.bucket_bytes().size(), 2u);  // one f32 bucket, one bf16 bucket
  auto local = std::make_shared<MixedPrecision>();
  copy_into(*local, *model);
  const Tensor x = host_randn({4, 6}, uint32_t(800 + rank()));
  ddp(x).sum().backward();
  (*local)(x).sum().backward();
  EXPECT_EQ(model->fc2->weight.grad().dtype(), DType::bf16);
  // The average of the ranks' local gradients (computed here in f32), rounded once.
  const std::vector<float> mean = mean_over_ranks(values(grads(*local)));
  EXPECT_LE(worst(values(grads(*model)), mean, 1e-5, 1e-2), 1.0);
  expect_same_on_all_ranks(values(grads(*model)), "gradients");
}

TEST(DistributedDataParallelTest, BackwardThatFailsMidwayLeavesItUsable) {
  manual_seed(95);
  auto model = mlp();
  DistributedDataParallel ddp(model, {.bucket_cap_mb = kSmallBucketsMb});
  // The first layer's weight gets its gradient last: by then the last layer's bucket is out.
  bool fail = true;
  Tensor w0 = model->parameters()[0];
  auto h = w0.register_hook([&](const Tensor&) {
    if (fail) throw std::runtime_error("hook failure");
  });
  const Tensor x = host_randn({2, 6}, uint32_t(950 + rank()));
  EXPECT_THROW(ddp(x).sum().backward(), std::runtime_error);
  fail = false;
  model->zero_grad();
  ddp(x).sum().backward();
  auto local = mlp();
  copy_into(*local, *model);
  (*local)(x).sum().backward();
  const std::vector<float> mean = mean_over_ranks(values(grads(*local)));
  EXPECT_LE(worst(values(grads(*model)), mean, 1e-6, 1e-4), 1.0);
  h.remove();
}

TEST(DistributedDataParallelTest, TiedParameterIsReducedOnce) {
  manual_seed(97);
  auto fc = std::make_shared<nn::Linear>(6, 6);
  auto model = nn::make_sequential(fc, std::make_shared<nn::Tanh>(), fc);  // fc used twice
  DistributedDataParallel ddp(model);
  EXPECT_EQ(model->parameters().size(), 2u);
  const Tensor x = host_randn({2, 6}, uint32_t(970 + rank()));
  ddp(x).sum().backward();
  auto local_fc = std::make_shared<nn::Linear>(6, 6);
  auto local = nn::make_sequential(local_fc, std::make_shared<nn::Tanh>(), local_fc);
  copy_into(*local, *model);
  (*local)(x).sum().backward();
  const std::vector<float> mean = mean_over_ranks(values(grads(*local)));
  EXPECT_LE(worst(values(grads(*model)), mean, 1e-6, 1e-4), 1.0);
}

TEST(DistributedDataParallelTest, ParametersOnEveryDevice) {
  // ref, cpu and the GPUs (the same list on every rank): buckets live on the parameters' device.
  for (const Device& device : dist_util::devices()) {
    SCOPED_TRACE(device.str());
    manual_seed(90);
    auto model = mlp();
    model->to(device);
    DistributedDataParallel ddp(model, {.bucket_cap_mb = kSmallBucketsMb});
    auto local = mlp();
    local->to(device);
    copy_into(*local, *model);
    const Tensor x = host_randn({3, 6}, uint32_t(900 + rank())).to(device);
    ddp(x).sum().backward();
    (*local)(x).sum().backward();
    for (const Tensor& p : model->parameters()) EXPECT_EQ(p.grad().device(), device);
    const std::vector<float> mean = mean_over_ranks(values(grads(*local)));
    EXPECT_LE(worst(values(grads(*model)), mean, 1e-6, 1e-4), 1.0);
  }
}

TEST(DistributedDataParallelTest, BadOptionsAndModules) {
  auto model = mlp();
  auto expect = [](auto fn, const char* part) {
    try {
      fn();
      ADD_FAILURE() << "expected an error containing " << part;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  expect([] { DistributedDataParallel(nullptr); }, "null");
  expect([&] { DistributedDataParallel(model, {.bucket_cap_mb = 0}); }, "bucket_cap_mb");
  auto frozen = mlp();
  for (Tensor p : frozen->parameters()) p.requires_grad_(false);
  expect([&] { DistributedDataParallel d(frozen); }, "no parameters that require grad");
}
