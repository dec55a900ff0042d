// Async collectives: handles, overlap with the caller, completion order and waiting semantics.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "dist_util.h"

namespace ember {
namespace {

using dist::ReduceOp;
using namespace test::dist_util;

TEST(DistAsync, SeveralInFlightWaitedInReverseOrder) {
  const int world = dist::world_size();
  const int me = dist::rank();
  Tensor a = make(me, {1001}, DType::f32, Device::cpu());
  Tensor b = make(me, {7}, DType::i64, Device::ref());
  Tensor c = make(me, {3, 5}, DType::f16, Device::cpu()).t();  // staged: non-contiguous f16
  Tensor d = zeros({world * 4}, {DType::u8, Device::cpu()});
  Tensor e = make(me, {33}, DType::b8, Device::cpu());
  std::vector<dist::Work> works;
  works.push_back(dist::all_reduce(a, ReduceOp::sum, true));
  works.push_back(dist::broadcast(b, world - 1, true));
  works.push_back(dist::all_reduce(c, ReduceOp::mean, true));
  works.push_back(dist::all_gather_into_tensor(d, make(me, {4}, DType::u8, Device::cpu()), true));
  works.push_back(dist::all_reduce(e, ReduceOp::min, true));
  for (size_t i = works.size(); i-- > 0;) works[i].wait();
  for (dist::Work& w : works) EXPECT_TRUE(w.is_completed());
  expect_values(a, reduced(ReduceOp::sum, 1001, DType::f32), "a");
  expect_values(b, make(world - 1, {7}, DType::i64, Device::ref()).to_vector<double>(), "b");
  Tensor want_c =
      from_vector<double>(reduced(ReduceOp::mean, 15, DType::f16), {3, 5}, Device::ref()).t();
  expect_values(c, want_c.to_vector<double>(), "c");
  std::vector<double> want_d;
  for (int r = 0; r < world; ++r)
    for (double v : make(r, {4}, DType::u8, Device::ref()).to_vector<double>()) want_d.push_back(v);
  expect_values(d, want_d, "d");
  expect_values(e, reduced(ReduceOp::min, 33, DType::b8), "e");
}

// The caller gets the handle back while the peers have not even called the collective yet.
// Rank 0 checks its op is not complete, then tells the others (a file) to join.
TEST(DistAsync, ReturnsBeforeThePeersJoin) {
  if (dist::world_size() == 1) GTEST_SKIP() << "one process: nothing to wait for";
  Tensor token = scalar_tensor(int64_t(0), {DType::i64, Device::cpu()});
  if (dist::rank() == 0)
    token.fill_(int64_t(std::chrono::steady_clock::now().time_since_epoch().count() % 1000000007));
  dist::broadcast(token, 0);
  const std::filesystem::path go = std::filesystem::temp_directory_path() /
                                   ("ember_dist_go_" + std::to_string(token.item<int64_t>()));
  Tensor x = make(dist::rank(), {64}, DType::f32, Device::cpu());
  if (dist::rank() == 0) {
    dist::Work w = dist::all_reduce(x, ReduceOp::sum, true);
    EXPECT_FALSE(w.is_completed());
    { std::ofstream(go.string()) << "go"; }
    w.wait();
    EXPECT_TRUE(w.is_completed());
  } else {
    // Bounded: the group's timeout ends the test anyway if rank 0 never writes the file.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!std::filesystem::exists(go) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    dist::all_reduce(x, ReduceOp::sum);
  }
  expect_values(x, reduced(ReduceOp::sum, 64, DType::f32), "x");
  dist::barrier();  // every rank has seen the file before it goes
  if (dist::rank() == 0) std::filesystem::remove(go);
}

TEST(DistAsync, WaitSemantics) {
  dist::Work none;
  EXPECT_TRUE(none.is_completed());
  none.wait();
  Tensor x = make(dist::rank(), {5}, DType::i32, Device::cpu());
  dist::Work w = dist::all_reduce(x, ReduceOp::max, true);
  w.wait();
  w.wait();  // again: nothing
  expect_values(x, reduced(ReduceOp::max, 5, DType::i32), "waited twice");
  // A sync call returns a completed handle.
  EXPECT_TRUE(dist::all_reduce(x, ReduceOp::min).is_completed());
  // A handle dropped unwaited waits for its op: the (staged) result is there afterwards.
  Tensor y = make(dist::rank(), {6}, DType::bf16, Device::ref()).view({2, 3}).t();
  { dist::Work dropped = dist::all_reduce(y, ReduceOp::sum, true); }
  expect_values(y.contiguous().flatten(),
                from_vector<double>(reduced(ReduceOp::sum, 6, DType::bf16), {2, 3}, Device::ref())
                    .t()
                    .contiguous()
                    .flatten()
                    .to_vector<double>(),
                "dropped handle");
  // Assigning over a pending handle waits for it first (and writes the staged result back).
  Tensor z = make(dist::rank(), {3, 2}, DType::f64, Device::cpu()).t();
  dist::Work h = dist::all_reduce(z, ReduceOp::sum, true);
  h = dist::Work();
  EXPECT_TRUE(h.is_completed());
  expect_values(z.t(), reduced(ReduceOp::sum, 6, DType::f64), "reassigned handle");
}

}  // namespace
}  // namespace ember
