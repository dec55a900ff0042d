// Op-table cases for the indexing family. Values take every dtype; indices are i64. Layout
// variants keep indices in range (a permuted, stepped or broadcast index holds the same or
// repeated values); where duplicates would make a plain write depend on order across backends,
// the index is kept un-varied and unique.
#include "op_table.h"

namespace ember::testing {
namespace {

using Fn = std::function<std::vector<Tensor>(const Inputs&)>;
using Gen = std::function<Inputs(DType, uint64_t)>;

int add_case(const std::string& name, std::vector<DType> dtypes, Gen gen, Fn fn,
             std::vector<bool> vary = {}) {
  return register_case(
      OpCase{name, std::move(dtypes), std::move(gen), std::move(fn), std::move(vary)});
}

Tensor idx(const Shape& s, uint64_t seed, int64_t lo, int64_t hi) {
  return integers(s, DType::i64, seed, lo, hi);
}

// [rows, cols] i64, each column a distinct set of rows out of [0, n) (rows <= n).
Tensor unique_columns(int64_t rows, int64_t cols, int64_t n, uint64_t seed) {
  Tensor shift = idx({1, cols}, seed, 0, n);
  return remainder(arange(rows, {DType::i64, Device::ref()}).unsqueeze(1) + shift, Scalar(n));
}

std::vector<DType> no_bool() { return numeric_dtypes(); }

const int kGatherScatter = [] {
  const auto all = all_dtypes();
  add_case(
      "gather/dim0", all,
      [](DType dt, uint64_t s) {
        return Inputs{uniform({4, 5}, dt, s), idx({3, 5}, s + 1, 0, 4)};
      },
      [](const Inputs& in) { return std::vector<Tensor>{gather(in[0], 0, in[1])}; });
  add_case(
      "gather/dim1_3d", all,
      [](DType dt, uint64_t s) {
        return Inputs{uniform({2, 4, 3}, dt, s), idx({2, 6, 2}, s + 1, 0, 4)};
      },
      [](const Inputs& in) { return std::vector<Tensor>{gather(in[0], 1, in[1])}; });
  add_case(
      "scatter/dim0", all,
      [](DType dt, uint64_t s) {
        return Inputs{uniform({4, 5}, dt, s), unique_columns(3, 5, 4, s + 1),
                      uniform({3, 6}, dt, s + 2)};
      },
      [](const Inputs& in) { return std::vector<Tensor>{scatter(in[0], 0, in[1], in[2])}; },
      {true, false, true});
  add_case(
      "scatter/scalar_dim1", all,
      [](DType dt, uint64_t s) {
        return Inputs{uniform({4, 5}, dt, s), idx({4, 2}, s + 1, 0, 5)};
      },
      [](const Inputs& in) { return std::vector<Tensor>{scatter(in[0], 1, in[1], Scalar(1))}; });
  add_case(
      "scatter_add/dim1", all,
      [](DType dt, uint64_t s) {
        return Inputs{uniform({3, 4}, dt, s), idx({3, 6}, s + 1, 0, 4), uniform({3, 6}, dt, s + 2)};
      },
      [](const Inputs& in) { return std::vector<Tensor>{scatter_add(in[0], 1, in[1], in[2])}; });
  for (const char* r : {"sum", "prod", "mean", "amax", "amin"}) {
    for (bool self : {true, false}) {
      const std::string name = std::string("scatter_reduce/") + r + (self ? "" : "_noself");
      add_case(
          name, std::string(r) == "mean" ? no_bool() : all,
          [](DType dt, uint64_t s) {
            return Inputs{uniform({4, 5}, dt, s), idx({6, 5}, s + 1, 0, 4),
                          uniform({6, 5}, dt, s + 2)};
          },
          [r = std::string(r), self](const Inputs& in) {
            return std::vector<Tensor>{scatter_reduce(in[0], 0, in[1], in[2], r, self)};
          });
    }
  }
  add_case(
      "take_along_dim/dim1", all,
      [](DType dt, uint64_t s) {
        return Inputs{uniform({4, 5}, dt, s), idx({1, 7}, s + 1, 0, 5)};
      },
      [](const Inputs& in) { return std::vector<Tensor>{take_along_dim(in[0], in[1], 1)}; });
  add_case(
      "take_along_dim/flat", all,
      [](DType dt, uint64_t s) {
        return Inputs{uniform({4, 5}, dt, s), idx({2, 3}, s + 1, 0, 20)};
      },
      [](const Inputs& in) {
        return std::vector<Tensor>{take_along_dim(in[0], in[1], std::nullopt)};
      });
  return 0;
}();

const int kSelect = [] {
  const auto all = all_dtypes();
  add_case(
      "index_select/dim1", all,
      [](DType dt, uint64_t s) {
        return Inputs{uniform({3, 5}, dt, s), idx({7}, s + 1, 0, 5)};
      },
      [](const Inputs& in) { return std::vector<Tensor>{index_select(in[0], 1, in[1])}; });
  add_case(
      "index_add/alpha2", no_bool(),
      [](DType dt, uint64_t s) {
        return Inputs{uniform({4, 3}, dt, s), idx({6}, s + 1, 0, 4), uniform({6, 3}, dt, s + 2)};
      },
      [](const Inputs& in) { return std::vector<Tensor>{index_add(in[0], 0, in[1], in[2], 2)}; });
  add_case(
      "index_add/dim1", all,
      [](DType dt, uint64_t s) {
        return Inputs{uniform({3, 4}, dt, s), idx({5}, s + 1, 0, 4), uniform({3, 5}, dt, s + 2)};
      },
      [](const Inputs& in) { return std::vector<Tensor>{index_add(in[0], 1, in[1], in[2])}; });
  add_case(
      "index/two_broadcast", all,
      [](DType dt, uint64_t s) {
        return Inputs{uniform({4, 5, 3}, dt, s), idx({2, 3}, s + 1, -4, 4), idx({3}, s + 2, -5, 5)};
      },
      [](const Inputs& in) {
        return std::vector<Tensor>{index(in[0], {in[1], in[2]})};
      });
  add_case(
      "index/non_adjacent", all,
      [](DType dt, uint64_t s) {
        return Inputs{uniform({4, 5, 3}, dt, s), idx({3}, s + 1, 0, 4), idx({3}, s + 2, -3, 3)};
      },
      [](const Inputs& in) {
        return std::vector<Tensor>{index(in[0], {in[1], Tensor(), in[2]})};
      });
  add_case(
      "index/mask", all,
      [](DType dt, uint64_t s) {
        return Inputs{uniform({4, 5}, dt, s), uniform({4, 5}, DType::b8, s + 1)};
      },
      [](const Inputs& in) { return std::vector<Tensor>{index(in[0], {in[1]})}; });
  add_case(
      "index_put/unique", all,
      [](DType dt, uint64_t s) {
        manual_seed(Device::ref(), s + 1);
        Tensor rows = randperm(4, {DType::i64, Device::ref()}).narrow(0, 0, 3);
        return Inputs{uniform({4, 5}, dt, s), rows, uniform({3, 5}, dt, s + 2)};
      },
      [](const Inputs& in) { return std::vector<Tensor>{index_put(in[0], {in[1]}, in[2])}; },
      {true, false, true});
  add_case(
      "index_put/accumulate", all,
      [](DType dt, uint64_t s) {
        return Inputs{uniform({4, 5}, dt, s), idx({6}, s + 1, -4, 4), idx({6}, s + 2, 0, 5),
                      uniform({6}, dt, s + 3)};
      },
      [](const Inputs& in) {
        return std::vector<Tensor>{index_put(in[0], {in[1], in[2]}, in[3], true)};
      });
  add_case(
      "index_put/mask", all,
      [](DType dt, uint64_t s) {
        return Inputs{uniform({4, 5}, dt, s), uniform({4, 5}, DType::b8, s + 1),
                      uniform({}, dt, s + 2)};
      },
      [](const Inputs& in) { return std::vector<Tensor>{index_put(in[0], {in[1]}, in[2])}; });
  return 0;
}();

const int kMasks = [] {
  const auto all = all_dtypes();
  add_case(
      "masked_fill/scalar", all,
      [](DType dt, uint64_t s) {
        return Inputs{uniform({4, 5}, dt, s), uniform({4, 5}, DType::b8, s + 1)};
      },
      [](const Inputs& in) { return std::vector<Tensor>{masked_fill(in[0], in[1], 1)}; });
  add_case(
      "masked_fill/tensor", all,
      [](DType dt, uint64_t s) {
        return Inputs{uniform({4, 5}, dt, s), uniform({5}, DType::b8, s + 1),
                      uniform({}, dt, s + 2)};
      },
      [](const Inputs& in) { return std::vector<Tensor>{masked_fill(in[0], in[1], in[2])}; });
  add_case(
      "masked_select", all,
      [](DType dt, uint64_t s) {
        return Inputs{uniform({4, 5}, dt, s), uniform({5}, DType::b8, s + 1)};
      },
      [](const Inputs& in) { return std::vector<Tensor>{masked_select(in[0], in[1])}; });
  add_case(
      "nonzero", all,
      [](DType dt, uint64_t s) {
        return Inputs{uniform({4, 5}, dt, s, -1, 1.5)};
      },
      [](const Inputs& in) { return std::vector<Tensor>{nonzero(in[0])}; });
  // The same data at ranks 3, 2 and 1 in one process (a kernel cached for one rank once served
  // the others: wrong rows on Vulkan, a crash on OpenCL).
  add_case(
      "nonzero/ranks", all,
      [](DType dt, uint64_t s) {
        return Inputs{uniform({2, 3, 8}, dt, s, -1, 1.5)};
      },
      [](const Inputs& in) {
        return std::vector<Tensor>{nonzero(in[0]), nonzero(in[0].reshape({6, 8})),
                                   nonzero(in[0].flatten()),
                                   masked_select(in[0], in[0].to(DType::b8))};
      });
  add_case(
      "one_hot/given", int_dtypes(),
      [](DType dt, uint64_t s) {
        return Inputs{integers({3, 4}, dt, s, 0, 5)};
      },
      [](const Inputs& in) { return std::vector<Tensor>{one_hot(in[0], 6)}; });
  add_case(
      "one_hot/inferred", int_dtypes(),
      [](DType dt, uint64_t s) {
        return Inputs{integers({3, 4}, dt, s, 0, 5)};
      },
      [](const Inputs& in) { return std::vector<Tensor>{one_hot(in[0])}; });
  add_case(
      "slice_assign_", all,
      [](DType dt, uint64_t s) {
        return Inputs{uniform({4, 6}, dt, s), uniform({4, 2}, dt, s + 1)};
      },
      [](const Inputs& in) {
        Tensor y = in[0].clone();
        slice_assign_(y, 1, 1, 5, 2, in[1]);
        return std::vector<Tensor>{y};
      });
  return 0;
}();

}  // namespace
}  // namespace ember::testing
