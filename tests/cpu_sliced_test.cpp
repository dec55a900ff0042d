// The cpu backend's sliced path (src/backends/cpu/sliced.cpp): ops without a dedicated kernel run
// the reference kernel on slices in parallel. Each case runs one primitive on ref and on cpu with
// the same operands (large enough to split, with strided views) and expects identical bits, and
// checks that the cpu run took the sliced path.
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/kernels.h"
#include "backends/cpu/thread_pool.h"
#include "ember/ember.h"
#include "op_table.h"
#include "runtime/backend.h"

namespace ember {
namespace {

const Device kCpu = Device::cpu();
const Device kRef = Device::ref();

struct ThreadGuard {
  ThreadGuard() { set_num_threads(2); }
  ~ThreadGuard() { set_num_threads(0); }
};

// run(dev) builds the op's operands on dev, executes one primitive and returns its outputs.
using Run = std::function<std::vector<Tensor>(const Device&)>;

void expect_same(const std::string& what, const Run& run, bool expect_split = true) {
  ThreadGuard threads;
  const std::vector<Tensor> want = run(kRef);
  const int64_t before = cpu::sliced_runs();
  const std::vector<Tensor> got = run(kCpu);
  if (expect_split)
    EXPECT_GT(cpu::sliced_runs(), before) << what << ": the sliced path was not taken";
  ASSERT_EQ(want.size(), got.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(want[i].defined(), got[i].defined()) << what << " output " << i;
    if (want[i].defined())
      EXPECT_EQ(testing::compare(want[i], got[i].to(kRef), 0.0), "") << what << " output " << i;
  }
}

Tensor out(const Shape& s, DType t, const Device& dev) { return empty(s, {t, dev}); }

Tensor on(const Tensor& t, const Device& dev) { return t.to(dev); }

TEST(CpuSlicedTest, ReductionsWithoutAKernel) {
  const Tensor xi = testing::integers({300, 257}, DType::i32, 1, -3, 4);
  const Tensor xb = testing::integers({300, 257}, DType::b8, 2, 0, 2);
  for (auto op : {ir::ReduceOp::prod, ir::ReduceOp::sum, ir::ReduceOp::any, ir::ReduceOp::all}) {
    for (int64_t dim : {0, 1}) {
      const Tensor& x = (op == ir::ReduceOp::any || op == ir::ReduceOp::all) ? xb : xi;
      expect_same("reduce " + std::to_string(int(op)) + " dim " + std::to_string(dim),
                  [&](const Device& d) {
                    Shape s = {300, 257};
                    s[size_t(dim)] = 1;
                    const DType dt = x.dtype() == DType::b8 ? DType::b8 : DType::i64;
                    Tensor dst = out(s, dt, d);
                    backend_for(d).execute(ir::Reduce{op, on(x, d).t().t(), {dim}, dst, {}});
                    return std::vector<Tensor>{dst};
                  });
    }
  }
  // Every dim reduced: partials over slices, then combined. Products of [-3, 3] wrap around,
  // the u8 sums wrap too; a lone true / false near the end decides any / all.
  const Tensor big = testing::integers({70001}, DType::i64, 16, -3, 4);
  const Tensor odd = add(mul(testing::integers({70001}, DType::i64, 20, -2, 2), Scalar(2)),
                         Scalar(1));  // -3, -1, 1, 3: the product wraps and is never 0
  Tensor ones = testing::integers({1000, 300}, DType::b8, 17, 1, 2);
  ones.data_ptr<bool>()[299000] = false;
  Tensor zeros = testing::integers({1000, 300}, DType::b8, 18, 0, 1);
  zeros.data_ptr<bool>()[299000] = true;
  const Tensor bytes = testing::integers({300, 1000}, DType::u8, 19, 0, 256);
  struct Full {
    ir::ReduceOp op;
    Tensor x;
    DType dst;
  };
  for (const Full& f :
       {Full{ir::ReduceOp::prod, big, DType::i64}, Full{ir::ReduceOp::sum, big, DType::i64},
        Full{ir::ReduceOp::max, big, DType::i64}, Full{ir::ReduceOp::all, ones, DType::b8},
        Full{ir::ReduceOp::any, zeros, DType::b8}, Full{ir::ReduceOp::any, ones, DType::b8},
        Full{ir::ReduceOp::sum, bytes, DType::u8}, Full{ir::ReduceOp::min, bytes.t(), DType::u8}}) {
    expect_same("full reduce " + std::to_string(int(f.op)) + " " + dtype_name(f.x.dtype()),
                [&](const Device& d) {
                  std::vector<int64_t> dims;
                  Shape s = f.x.shape();
                  for (size_t i = 0; i < s.size(); ++i) {
                    dims.push_back(int64_t(i));
                    s[i] = 1;
                  }
                  Tensor dst = out(s, f.dst, d);
                  backend_for(d).execute(ir::Reduce{f.op, on(f.x, d), dims, dst, {}});
                  return std::vector<Tensor>{dst};
                });
  }
  // max with indices on a transposed i32 view: first index of the extreme.
  expect_same("max indices", [&](const Device& d) {
    Tensor src = on(xi, d).t();  // [257, 300]
    Tensor v = out({257, 1}, DType::i32, d), i = out({257, 1}, DType::i64, d);
    backend_for(d).execute(ir::Reduce{ir::ReduceOp::max, src, {1}, v, i});
    return std::vector<Tensor>{v, i};
  });
}

TEST(CpuSlicedTest, ScansAndSorts) {
  const Tensor x = testing::uniform({200, 300}, DType::f32, 3, -2, 2);
  for (auto op : {ir::ScanOp::cumprod, ir::ScanOp::cummax, ir::ScanOp::cummin}) {
    for (int64_t dim : {0, 1}) {
      expect_same("scan " + std::to_string(int(op)) + " dim " + std::to_string(dim),
                  [&](const Device& d) {
                    Tensor src = on(x, d).t();  // [300, 200]
                    Tensor v = out(src.shape(), DType::f32, d);
                    Tensor i;
                    if (op != ir::ScanOp::cumprod) i = out(src.shape(), DType::i64, d);
                    backend_for(d).execute(ir::Scan{op, src, dim, v, i});
                    return std::vector<Tensor>{v, i};
                  });
    }
  }
  // Ties (few distinct values) and NaN check stability and NaN ordering per line.
  Tensor y = testing::integers({64, 1000}, DType::f32, 4, 0, 5);
  y.data_ptr<float>()[17] = std::numeric_limits<float>::quiet_NaN();
  for (bool desc : {false, true}) {
    for (int64_t dim : {0, 1}) {
      expect_same("sort dim " + std::to_string(dim), [&](const Device& d) {
        Tensor src = on(y, d);
        Tensor v = out(src.shape(), DType::f32, d), i = out(src.shape(), DType::i64, d);
        backend_for(d).execute(ir::Sort{src, dim, desc, v, i});
        return std::vector<Tensor>{v, i};
      });
    }
  }
}

TEST(CpuSlicedTest, GatherScatterAndIndexOps) {
  const Tensor src = testing::uniform({300, 200}, DType::f32, 5);
  const Tensor idx = testing::integers({300, 150}, DType::i64, 6, 0, 200);
  expect_same("gather dim 1", [&](const Device& d) {
    Tensor dst = out({300, 150}, DType::f32, d);
    backend_for(d).execute(ir::Gather{on(src, d), 1, on(idx, d), dst});
    return std::vector<Tensor>{dst};
  });
  const Tensor idx0 = testing::integers({250, 200}, DType::i64, 7, 0, 300);
  expect_same("gather dim 0 of a transposed source", [&](const Device& d) {
    Tensor s = on(src.t().contiguous().t(), d);
    Tensor dst = out({250, 200}, DType::f32, d);
    backend_for(d).execute(ir::Gather{s, 0, on(idx0, d), dst});
    return std::vector<Tensor>{dst};
  });
  for (auto red : {ir::ScatterReduce::none, ir::ScatterReduce::sum, ir::ScatterReduce::amax}) {
    expect_same("scatter " + std::to_string(int(red)), [&](const Device& d) {
      Tensor dst = on(src, d).clone();
      const Tensor vals = testing::uniform({300, 150}, DType::f32, 8);
      backend_for(d).execute(ir::Scatter{dst, 1, on(idx, d), on(vals, d), red, true});
      return std::vector<Tensor>{dst};
    });
  }
  const Tensor sel = testing::integers({180}, DType::i64, 9, 0, 200);
  expect_same("index_select dim 1", [&](const Device& d) {
    Tensor dst = out({300, 180}, DType::f32, d);
    backend_for(d).execute(ir::IndexSelect{on(src, d), 1, on(sel, d), dst});
    return std::vector<Tensor>{dst};
  });
  const Tensor rows = testing::integers({400}, DType::i64, 10, 0, 300);  // with duplicates
  expect_same("index_add dim 0", [&](const Device& d) {
    Tensor dst = on(src, d).clone();
    const Tensor add = testing::uniform({400, 200}, DType::f32, 11);
    backend_for(d).execute(ir::IndexAdd{dst, 0, on(rows, d), on(add, d), Scalar(2.0)});
    return std::vector<Tensor>{dst};
  });
}

TEST(CpuSlicedTest, SpatialOps) {
  const Tensor x = testing::uniform({3, 16, 37, 41}, DType::f32, 12);
  for (bool mx : {false, true}) {
    expect_same(mx ? "adaptive max" : "adaptive avg", [&](const Device& d) {
      Tensor dst = out({3, 16, 7, 5}, DType::f32, d);
      Tensor idx;
      if (mx) idx = out({3, 16, 7, 5}, DType::i64, d);
      backend_for(d).execute(ir::AdaptivePool{mx, on(x, d), dst, idx});
      return std::vector<Tensor>{dst, idx};
    });
  }
  for (auto mode : {ir::InterpMode::nearest, ir::InterpMode::linear, ir::InterpMode::cubic}) {
    expect_same("interpolate " + std::to_string(int(mode)), [&](const Device& d) {
      Tensor dst = out({3, 16, 50, 83}, DType::f32, d);
      backend_for(d).execute(ir::Interpolate{mode, false, {}, on(x, d), dst});
      return std::vector<Tensor>{dst};
    });
  }
}

TEST(CpuSlicedTest, NonzeroKeepsRowMajorOrder) {
  for (const Shape& s : {Shape{1000, 300}, Shape{70000}, Shape{7, 100, 60}}) {
    const Tensor x = testing::integers(s, DType::i32, 13, -1, 2);  // about 2/3 non-zero
    expect_same("nonzero", [&](const Device& d) {
      Tensor src = on(x, d);
      const int64_t n = sum(ne(x, Scalar(0))).item<int64_t>();
      Tensor dst = out({n, int64_t(s.size())}, DType::i64, d);
      backend_for(d).execute(ir::Nonzero{src, dst});
      return std::vector<Tensor>{dst};
    });
  }
}

TEST(CpuSlicedTest, SmallAndAliasedOpsStaySerial) {
  // Below the grain: the reference runs the whole op.
  const Tensor x = testing::uniform({10, 20}, DType::f32, 14);
  expect_same(
      "small sort",
      [&](const Device& d) {
        Tensor v = out({10, 20}, DType::f32, d), i = out({10, 20}, DType::i64, d);
        backend_for(d).execute(ir::Sort{on(x, d), 1, false, v, i});
        return std::vector<Tensor>{v, i};
      },
      false);
  // A scan written over its own source is not split (an output overlapping an input).
  const Tensor y = testing::uniform({400, 300}, DType::f32, 15);
  ThreadGuard threads;
  Tensor yc = on(y, kCpu).clone(), yr = y.clone();
  const int64_t before = cpu::sliced_runs();
  backend_for(kCpu).execute(ir::Scan{ir::ScanOp::cumprod, yc, 1, yc, {}});
  backend_for(kRef).execute(ir::Scan{ir::ScanOp::cumprod, yr, 1, yr, {}});
  EXPECT_EQ(cpu::sliced_runs(), before);
  EXPECT_EQ(testing::compare(yr, yc.to(kRef), 0.0), "");
}

}  // namespace
}  // namespace ember
