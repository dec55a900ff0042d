// Bad arguments throw on every rank alike, before anything reaches the engine: the group stays
// usable.
#include "dist_util.h"

namespace ember {
namespace {

using dist::ReduceOp;
using test::expect_error;
using namespace test::dist_util;

TEST(DistErrors, BadArgumentsNameTheOpAndTensors) {
  const int world = dist::world_size();
  const Device cpu = Device::cpu();
  expect_error([] { dist::all_reduce(Tensor()); }, {"[dist::all_reduce]", "undefined"});
  expect_error(
      [&] {
        dist::all_reduce(zeros({3}, {DType::i32, cpu}), ReduceOp::mean);
      },
      {"[dist::all_reduce]", "mean needs a floating-point tensor", "int32 [3]"});
  expect_error(
      [&] {
        dist::all_reduce(zeros({3}, {DType::b8, cpu}), ReduceOp::mean);
      },
      {"[dist::all_reduce]", "mean", "bool"});
  expect_error([&] { dist::broadcast(zeros({2}, cpu), world); },
               {"[dist::broadcast]", "src " + std::to_string(world) + " is not a rank",
                "world size is " + std::to_string(world)});
  expect_error([&] { dist::broadcast(zeros({2}, cpu), -1); }, {"[dist::broadcast]", "src -1"});
  expect_error([&] { dist::broadcast(Tensor(), 0); }, {"[dist::broadcast]", "undefined"});

  std::vector<Tensor> outs;
  for (int r = 0; r <= world; ++r) outs.push_back(zeros({4}, cpu));
  expect_error([&] { dist::all_gather(outs, zeros({4}, cpu)); },
               {"[dist::all_gather]", "outputs has " + std::to_string(world + 1) + " tensors",
                "one per rank"});
  outs.pop_back();
  outs.back() = zeros({5}, cpu);
  expect_error([&] { dist::all_gather(outs, zeros({4}, cpu)); },
               {"[dist::all_gather]", "outputs[" + std::to_string(world - 1) + "]", "[5]", "[4]",
                "same shape and dtype"});
  outs.back() = zeros({4}, {DType::f64, cpu});
  expect_error([&] { dist::all_gather(outs, zeros({4}, cpu)); },
               {"[dist::all_gather]", "float64", "float32"});
  outs.back() = Tensor();
  expect_error([&] { dist::all_gather(outs, zeros({4}, cpu)); },
               {"[dist::all_gather]", "undefined"});

  expect_error([&] { dist::all_gather_into_tensor(zeros({world * 4 + 1}, cpu), zeros({4}, cpu)); },
               {"[dist::all_gather_into_tensor]",
                "output is float32 [" + std::to_string(world * 4 + 1) + "]",
                "must be float32 [" + std::to_string(world * 4) + "]"});
  expect_error(
      [&] {
        dist::all_gather_into_tensor(zeros({world * 4}, {DType::i8, cpu}), zeros({4}, cpu));
      },
      {"[dist::all_gather_into_tensor]", "int8"});

  std::vector<Tensor> ins(size_t(world), zeros({3}, cpu));
  ins.front() = zeros({3, 1}, cpu);
  expect_error([&] { dist::reduce_scatter(zeros({3}, cpu), ins); },
               {"[dist::reduce_scatter]", "inputs[0]", "[3, 1]", "output"});
  ins.pop_back();
  expect_error([&] { dist::reduce_scatter(zeros({3}, cpu), ins); },
               {"[dist::reduce_scatter]", "inputs has " + std::to_string(world - 1)});
  expect_error(
      [&] {
        dist::reduce_scatter_tensor(zeros({3}, cpu), zeros({3 * world, 2}, cpu));
      },
      {"[dist::reduce_scatter_tensor]", "input is float32 [" + std::to_string(3 * world) + ", 2]",
       "must be float32 [" + std::to_string(3 * world) + "]"});
  expect_error(
      [&] {
        dist::reduce_scatter_tensor(zeros({3}, {DType::u8, cpu}),
                                    zeros({3 * world}, {DType::u8, cpu}), ReduceOp::mean);
      },
      {"[dist::reduce_scatter_tensor]", "mean", "uint8"});

  EXPECT_FALSE(dist::default_group().broken());
  Tensor x = make(dist::rank(), {3}, DType::f32, cpu);
  dist::all_reduce(x);  // still usable
  expect_values(x, reduced(ReduceOp::sum, 3, DType::f32), "after the errors");
}

TEST(DistErrors, InitTwiceThrows) {
  expect_error([] { dist::init_process_group(); },
               {"[dist::init_process_group]", "already exists", "destroy_process_group"});
}

}  // namespace
}  // namespace ember
