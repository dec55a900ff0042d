// The collectives on every dtype, odd sizes, every device and non-contiguous views, checked on
// every rank against the rank formula (dist_util.h). Run with 1 process (dist/local) and under
// mpirun with 2 and 3 (dist/mpi2, dist/mpi3).
#include <thread>

#include "dist_util.h"

namespace ember {
namespace {

using dist::ReduceOp;
using namespace test::dist_util;

const int64_t kSizes[] = {0, 1, 7, 1001};
const ReduceOp kOps[] = {ReduceOp::sum, ReduceOp::mean, ReduceOp::max, ReduceOp::min};

TEST(DistCollectives, AllReduceEveryDtypeOpSizeDevice) {
  for (const Device& dev : devices())
    for (DType t : kAllDTypes) {
      if (!supports_dtype(dev, t)) continue;
      for (int64_t n : kSizes)
        for (ReduceOp op : kOps) {
          if (op == ReduceOp::mean && !is_floating(t)) continue;
          Tensor x = make(dist::rank(), {n}, t, dev);
          dist::all_reduce(x, op);
          EXPECT_EQ(x.device(), dev);
          EXPECT_EQ(x.dtype(), t);
          expect_values(
              x, reduced(op, n, t),
              "all_reduce " + std::string(dist::reduce_op_name(op)) + " " + label(dev, t, n));
        }
    }
}

TEST(DistCollectives, BroadcastFromEachSrc) {
  for (const Device& dev : devices())
    for (DType t : kAllDTypes) {
      if (!supports_dtype(dev, t)) continue;
      for (int64_t n : kSizes)
        for (int src = 0; src < dist::world_size(); ++src) {
          Tensor x = make(dist::rank(), {n}, t, dev);
          dist::broadcast(x, src);
          expect_values(x, make(src, {n}, t, Device::ref()).to_vector<double>(),
                        "broadcast from " + std::to_string(src) + " " + label(dev, t, n));
        }
    }
}

TEST(DistCollectives, AllGatherIntoListAndTensor) {
  const int world = dist::world_size();
  for (const Device& dev : devices())
    for (DType t : kAllDTypes) {
      if (!supports_dtype(dev, t)) continue;
      for (int64_t n : kSizes) {
        const std::string what = label(dev, t, n);
        std::vector<Tensor> outs;
        for (int r = 0; r < world; ++r) outs.push_back(zeros({n}, {t, dev}));
        dist::all_gather(outs, make(dist::rank(), {n}, t, dev));
        for (int r = 0; r < world; ++r)
          expect_values(outs[size_t(r)], make(r, {n}, t, Device::ref()).to_vector<double>(),
                        "all_gather outputs[" + std::to_string(r) + "] " + what);

        Tensor out = zeros({world * n, 2}, {t, dev});
        dist::all_gather_into_tensor(out, make(dist::rank(), {n, 2}, t, dev));
        for (int r = 0; r < world; ++r)
          expect_values(out.narrow(0, r * n, n),
                        make(r, {n, 2}, t, Device::ref()).to_vector<double>(),
                        "all_gather_into_tensor block " + std::to_string(r) + " " + what);
      }
    }
}

TEST(DistCollectives, ReduceScatterListAndTensor) {
  const int world = dist::world_size();
  const int me = dist::rank();
  for (const Device& dev : devices())
    for (DType t : kAllDTypes) {
      if (!supports_dtype(dev, t)) continue;
      for (int64_t n : kSizes)
        for (ReduceOp op : kOps) {
          if (op == ReduceOp::mean && !is_floating(t)) continue;
          const std::string what = std::string(dist::reduce_op_name(op)) + " " + label(dev, t, n);
          // Block j of every rank's input is indices [j * n, (j + 1) * n) of its formula.
          std::vector<Tensor> ins;
          for (int j = 0; j < world; ++j) ins.push_back(make(me, {n}, t, dev, j * n));
          Tensor out = zeros({n}, {t, dev});
          dist::reduce_scatter(out, ins, op);
          expect_values(out, reduced(op, n, t, me * n), "reduce_scatter " + what);

          Tensor out2 = zeros({n}, {t, dev});
          dist::reduce_scatter_tensor(out2, make(me, {world * n}, t, dev), op);
          expect_values(out2, reduced(op, n, t, me * n), "reduce_scatter_tensor " + what);
        }
    }
}

TEST(DistCollectives, ZeroDimTensors) {
  const int world = dist::world_size();
  Tensor x = make(dist::rank(), {}, DType::f32, Device::cpu());
  dist::all_reduce(x, ReduceOp::max);
  expect_values(x, reduced(ReduceOp::max, 1, DType::f32), "all_reduce 0-d");
  Tensor out = zeros({world}, {DType::i64, Device::cpu()});
  dist::all_gather_into_tensor(out, make(dist::rank(), {}, DType::i64, Device::cpu()));
  std::vector<double> want;
  for (int r = 0; r < world; ++r) want.push_back(value(r, 0, DType::i64));
  expect_values(out, want, "all_gather_into_tensor 0-d");
}

// Views: the result lands in the viewed elements of the base and nowhere else.
TEST(DistCollectives, NonContiguousViews) {
  const int me = dist::rank();
  for (const Device& dev : devices())
    for (DType t : {DType::f32, DType::f16, DType::i32, DType::b8, DType::u8}) {
      if (!supports_dtype(dev, t)) continue;
      const std::string what = label(dev, t, 15);
      // Transposed: a [3, 5] view of a [5, 3] base.
      Tensor base = make(me, {3, 5}, t, dev).t().contiguous();
      Tensor view = base.t();
      ASSERT_FALSE(view.is_contiguous());
      dist::all_reduce(view, ReduceOp::sum);
      expect_values(view, reduced(ReduceOp::sum, 15, t), "all_reduce transposed " + what);
      expect_values(base.t(), reduced(ReduceOp::sum, 15, t), "transposed base " + what);

      // Every other element: the others keep their value.
      Tensor strided = full({30}, 1, {t, dev});
      Tensor every2 = strided.slice(0, 0, 30, 2);
      every2.copy_(make(me, {15}, t, dev));
      dist::broadcast(every2, dist::world_size() - 1);
      expect_values(every2,
                    make(dist::world_size() - 1, {15}, t, Device::ref()).to_vector<double>(),
                    "broadcast strided " + what);
      expect_values(strided.slice(0, 1, 30, 2), std::vector<double>(15, 1),
                    "untouched elements " + what);

      // Non-contiguous outputs and inputs of the gathers and scatters.
      const int world = dist::world_size();
      Tensor cols = zeros({5, world}, {t, dev});
      std::vector<Tensor> outs;
      for (int r = 0; r < world; ++r) outs.push_back(cols.select(1, r));
      dist::all_gather(outs, make(me, {5, 3}, t, dev).t().select(0, 0));  // a column
      for (int r = 0; r < world; ++r)
        expect_values(outs[size_t(r)],
                      make(r, {5, 3}, t, Device::ref()).t().select(0, 0).to_vector<double>(),
                      "all_gather column " + std::to_string(r) + " " + what);
      Tensor in = make(me, {2 * world, 4}, t, dev).t().contiguous().t();
      Tensor out_base = zeros({4, 2}, {t, dev});
      ASSERT_FALSE(in.is_contiguous());
      dist::reduce_scatter_tensor(out_base.t(), in, ReduceOp::max);
      expect_values(out_base.t(), reduced(ReduceOp::max, 8, t, me * 8),
                    "reduce_scatter_tensor transposed " + what);
    }
}

// torch's in-place all_gather_into_tensor: the input is this rank's block of the output.
TEST(DistCollectives, AllGatherIntoTensorInPlace) {
  const int world = dist::world_size();
  const int me = dist::rank();
  Tensor out = zeros({world * 7}, {DType::f64, Device::cpu()});
  out.narrow(0, me * 7, 7).copy_(make(me, {7}, DType::f64, Device::cpu()));
  dist::all_gather_into_tensor(out, out.narrow(0, me * 7, 7));
  for (int r = 0; r < world; ++r)
    expect_values(out.narrow(0, r * 7, 7),
                  make(r, {7}, DType::f64, Device::ref()).to_vector<double>(),
                  "in-place block " + std::to_string(r));
}

TEST(DistCollectives, RequiresGradLeafIsWrittenInPlace) {
  Tensor w = make(dist::rank(), {4}, DType::f32, Device::cpu()).requires_grad_();
  dist::all_reduce(w, ReduceOp::sum);
  expect_values(w, reduced(ReduceOp::sum, 4, DType::f32), "leaf");
  Tensor wt = make(dist::rank(), {2, 2}, DType::f32, Device::cpu()).t().contiguous().t();
  wt.requires_grad_();
  dist::broadcast(wt, 0);
  expect_values(wt, make(0, {2, 2}, DType::f32, Device::ref()).to_vector<double>(), "leaf view");
}

TEST(DistCollectives, BarrierAndRanks) {
  dist::barrier();
  EXPECT_TRUE(dist::is_initialized());
  EXPECT_GE(dist::rank(), 0);
  EXPECT_LT(dist::rank(), dist::world_size());
  EXPECT_GE(dist::local_rank(), 0);
  EXPECT_LT(dist::local_rank(), dist::local_world_size());
  EXPECT_LE(dist::local_world_size(), dist::world_size());
  EXPECT_FALSE(dist::default_group().broken());
  // The launcher's world: mpirun's, or torchrun-style variables (gloo), or none (local).
  const std::string mpi = env("OMPI_COMM_WORLD_SIZE"), torchrun = env("WORLD_SIZE");
  EXPECT_EQ(std::to_string(dist::world_size()), !mpi.empty()        ? mpi
                                                : !torchrun.empty() ? torchrun
                                                                    : "1");
  const std::string backend = !env("EMBER_DIST_BACKEND").empty() ? env("EMBER_DIST_BACKEND")
                              : !mpi.empty()                     ? "mpi"
                              : !torchrun.empty()                ? "gloo"
                                                                 : "local";
  EXPECT_EQ(dist::default_group().backend(), backend);
  // Every rank sees the same ranks: their sum is 0 + 1 + ... + (world - 1).
  Tensor r = scalar_tensor(int64_t(dist::rank()), {DType::i64, Device::cpu()});
  dist::all_reduce(r);
  EXPECT_EQ(r.item<int64_t>(), int64_t(dist::world_size()) * (dist::world_size() - 1) / 2);
}

// Without EMBER_NUM_THREADS / OMP_NUM_THREADS, the ranks on a machine share its threads.
TEST(DistCollectives, ThreadsPerProcess) {
  if (!env("EMBER_NUM_THREADS").empty() || !env("OMP_NUM_THREADS").empty())
    GTEST_SKIP() << "threads set by the environment";
  const int hw = int(std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_EQ(get_num_threads(), std::max(1, hw / dist::local_world_size()));
}

}  // namespace
}  // namespace ember
