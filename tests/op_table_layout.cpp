// Op-table cases for cat, stack, split, chunk, repeat, tile, roll, tril, triu, diag, diagonal,
// meshgrid, pad, flip and as_strided.
#include "op_table.h"

namespace ember::testing {
namespace {

using Out = std::vector<Tensor>;
using Fn = std::function<Out(const Inputs&)>;

// A case with inputs of the given shapes (values uniform in [-3, 3)).
int layout_case(const std::string& name, std::vector<Shape> shapes, Fn fn,
                std::vector<DType> dtypes = all_dtypes()) {
  return register_case(OpCase{name, std::move(dtypes),
                              [shapes](DType dt, uint64_t seed) {
                                Inputs in;
                                for (size_t i = 0; i < shapes.size(); ++i)
                                  in.push_back(uniform(shapes[i], dt, seed + 100 * i, -3, 3));
                                return in;
                              },
                              std::move(fn)});
}

// Views come back as contiguous copies so the comparison reads their values.
Out copies(const std::vector<Tensor>& ts) {
  Out out;
  for (const auto& t : ts) out.push_back(t.contiguous());
  return out;
}

const int kLayout = [] {
  layout_case("cat/dim0", {{2, 3}, {1, 3}, {4, 3}},
              [](const Inputs& in) { return Out{cat(in, 0)}; });
  layout_case("cat/dim1", {{2, 3, 2}, {2, 1, 2}, {2, 0, 2}},
              [](const Inputs& in) { return Out{cat(in, 1)}; });
  layout_case("cat/neg_dim_legacy_empty", {{3, 2}, {0}, {3, 4}},
              [](const Inputs& in) { return Out{cat(in, -1)}; });
  layout_case("cat/promote_f64", {{2, 3}, {2, 2}}, [](const Inputs& in) {
    return Out{cat({in[0], in[1].to(DType::f64)}, 1)};
  });
  layout_case("stack/dim0", {{2, 3}, {2, 3}}, [](const Inputs& in) { return Out{stack(in, 0)}; });
  layout_case("stack/dim_last", {{2, 3}, {2, 3}, {2, 3}},
              [](const Inputs& in) { return Out{stack(in, -1)}; });
  layout_case("split/size", {{7, 3}}, [](const Inputs& in) { return copies(split(in[0], 3)); });
  layout_case("split/sizes_dim1", {{2, 6}}, [](const Inputs& in) {
    return copies(split(in[0], std::vector<int64_t>{1, 0, 5}, 1));
  });
  layout_case("chunk", {{3, 7}}, [](const Inputs& in) { return copies(chunk(in[0], 3, -1)); });
  layout_case("repeat", {{2, 3}}, [](const Inputs& in) { return Out{repeat(in[0], {2, 1, 3})}; });
  layout_case("tile", {{2, 3}}, [](const Inputs& in) { return Out{tile(in[0], {2})}; });
  layout_case("roll/dims", {{3, 4}}, [](const Inputs& in) {
    return Out{roll(in[0], {1, -5}, {0, 1})};
  });
  layout_case("roll/flat", {{3, 4}}, [](const Inputs& in) { return Out{roll(in[0], {5})}; });
  layout_case("tril", {{2, 4, 5}}, [](const Inputs& in) {
    return Out{tril(in[0]), tril(in[0], -1), tril(in[0], 2)};
  });
  layout_case("triu", {{2, 5, 4}}, [](const Inputs& in) {
    return Out{triu(in[0]), triu(in[0], 1), triu(in[0], -2)};
  });
  layout_case("diag/1d", {{4}}, [](const Inputs& in) {
    return Out{diag(in[0]), diag(in[0], 2), diag(in[0], -1)};
  });
  layout_case("diag/2d", {{4, 5}}, [](const Inputs& in) {
    return Out{diag(in[0]), diag(in[0], 1), diag(in[0], -2)};
  });
  layout_case("diagonal", {{3, 4, 5}}, [](const Inputs& in) {
    return copies({diagonal(in[0], 1, 1, 2), diagonal(in[0], -1, 0, 2)});
  });
  layout_case("meshgrid/ij", {{3}, {4}, {2}},
              [](const Inputs& in) { return copies(meshgrid(in, "ij")); });
  layout_case("meshgrid/xy", {{3}, {4}, {2}},
              [](const Inputs& in) { return copies(meshgrid(in, "xy")); });
  layout_case("pad/constant", {{2, 3, 4}}, [](const Inputs& in) {
    return Out{pad(in[0], {1, 2, 0, 1}, "constant", 1.0)};
  });
  layout_case("pad/constant_negative", {{2, 3, 4}}, [](const Inputs& in) {
    return Out{pad(in[0], {-1, 2, 1, -2})};
  });
  layout_case("pad/reflect", {{2, 3, 4, 5}}, [](const Inputs& in) {
    return Out{pad(in[0], {2, 1, 1, 2}, "reflect")};
  });
  layout_case("pad/replicate", {{2, 3, 4, 5}}, [](const Inputs& in) {
    return Out{pad(in[0], {3, 1, 0, 2}, "replicate")};
  });
  layout_case("pad/circular", {{2, 3, 4, 5}}, [](const Inputs& in) {
    return Out{pad(in[0], {2, -1, 4, 1}, "circular")};
  });
  layout_case("flip", {{3, 4, 2}}, [](const Inputs& in) { return Out{flip(in[0], {0, 2})}; });
  // as_strided reads the storage, so its input stays contiguous (no layout variants).
  register_case(OpCase{"as_strided",
                       all_dtypes(),
                       [](DType dt, uint64_t seed) {
                         return Inputs{uniform({4, 5}, dt, seed, -3, 3)};
                       },
                       [](const Inputs& in) {
                         const Tensor& x = in[0];
                         return copies({x.as_strided({3, 3}, {1, 1}),  // overlapping windows
                                        as_strided(x, {2, 3}, {7, 2}, 3),
                                        x.as_strided({2, 2}, {0, 5}, 19 - 5),    // stride 0
                                        x.narrow(0, 1, 2).as_strided({4}, {3}),  // from a view
                                        x.as_strided({}, {}, 19)});
                       },
                       {false}});
  register_case(
      OpCase{"as_strided/write_through",
             numeric_dtypes(),
             [](DType dt, uint64_t seed) {
               return Inputs{uniform({4, 5}, dt, seed, -3, 3), uniform({2, 3}, dt, seed + 1, 1, 3)};
             },
             [](const Inputs& in) {
               Tensor x = in[0].clone();
               x.as_strided({2, 3}, {6, 2}, 1).mul_(in[1]);
               return Out{x};
             },
             {false, true}});
  return 0;
}();

}  // namespace
}  // namespace ember::testing
