// ONNX shape, layout, indexing, casting and constant ops mapped onto ember/ops/{layout,indexing}.h
// and Tensor's views.
#include <algorithm>
#include <climits>

#include "onnx/ops.h"
#include "onnx/proto.h"
#include "tensor/internal.h"

namespace ember::onnx::detail {
namespace {

Tensor i64_tensor(const std::vector<int64_t>& v, Shape shape, Device d) {
  return from_vector<int64_t>(v, std::move(shape), d);
}

// ONNX allows negative indices everywhere (they count from the end): wrap them first. Ember's
// gather/index_select reject negative indices as torch does.
Tensor wrap_indices(const Tensor& idx, int64_t size) {
  Tensor i = idx.to(DType::i64);
  return where(lt(i, Scalar(0)), add(i, Scalar(size)), i);
}

// The same for the gather and scatter ops, range-checked first as ONNX states it: an index
// outside [-size, size) is an error naming the model's value, not the wrapped one.
Tensor checked_indices(const Tensor& idx, int64_t size, const char* op, int64_t dim) {
  return ember::detail::check_index(idx, size, op, /*allow_negative=*/true, dim);
}

std::string cast_check(const Node& n) {
  DType d;
  if (n.has("to") && !dtype_from_onnx(int32_t(n.i("to", 0)), d))
    return "cast to " + onnx_type_name(int32_t(n.i("to", 0)));
  for (size_t k = 0; k < n.input_types.size(); ++k)
    if (n.input_types[k] && !dtype_from_onnx(n.input_types[k], d))
      return "input type " + onnx_type_name(n.input_types[k]);
  return "";
}

// Slice of one axis with ONNX's clamping; negative steps go through a flip.
Tensor slice_axis(const Tensor& x, int64_t axis, int64_t start, int64_t end, int64_t step) {
  const int64_t n = x.size(axis);
  if (start < 0) start += n;
  if (end < 0) end += n;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, n);
    end = std::clamp<int64_t>(end, 0, n);
    return x.slice(axis, start, std::max(start, end), step);
  }
  start = std::clamp<int64_t>(start, 0, n - 1);
  end = std::clamp<int64_t>(end, -1, n - 1);
  // Element i of x is element n - 1 - i of the flipped tensor.
  int64_t s = n - 1 - start, e = n - 1 - end;
  return x.flip({axis}).slice(axis, s, std::max(s, e), -step);
}

// ScatterND with reduction mul/max/min: the m indexed dims flattened into one, each index tuple
// turned into its row there, and scatter_reduce along it (duplicates combine, as the spec says).
Tensors scatter_nd_reduce(const Tensors& in, const std::string& red) {
  const Tensor& x = in[0];
  const int64_t m = in[1].size(-1);
  Shape rest(x.shape().begin() + m, x.shape().end());
  int64_t lead = 1;
  Tensor row;
  for (int64_t k = m; k-- > 0;) {
    Tensor term = mul(wrap_indices(in[1].select(-1, k), x.size(k)), Scalar(lead));
    row = row.defined() ? add(row, term) : term;
    lead *= x.size(k);
  }
  row = row.reshape({-1});
  Shape us = rest, is(rest.size() + 1, 1), xs = rest;
  us.insert(us.begin(), row.numel());
  is[0] = row.numel();
  xs.insert(xs.begin(), lead);
  Tensor index = row.reshape(is).expand(us).contiguous();
  const char* torch_red = red == "mul" ? "prod" : red == "max" ? "amax" : "amin";
  Tensor y = scatter_reduce(x.reshape(xs), 0, index, in[2].reshape(us), torch_red, true);
  return {y.reshape(x.shape())};
}

Tensor depth_to_space(const Tensor& x, int64_t b, bool crd) {
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  Tensor y = crd ? x.reshape({N, C / (b * b), b, b, H, W}).permute({0, 1, 4, 2, 5, 3})
                 : x.reshape({N, b, b, C / (b * b), H, W}).permute({0, 3, 4, 1, 5, 2});
  return y.reshape({N, C / (b * b), H * b, W * b});
}

}  // namespace

void register_shape_ops(std::map<std::string, OpImpl>& r) {
  // ---- constants and metadata ----
  r["Constant"] = {
      [](const Node& n) -> std::string {
        if (n.has("sparse_value")) return "sparse_value";
        if (n.has("value_string") || n.has("value_strings")) return "string value";
        if (n.has("value") && cast_check(n) == "") {
          DType d;
          if (!dtype_from_onnx(n.attr("value")->t().data_type(), d))
            return "value type " + onnx_type_name(n.attr("value")->t().data_type());
        }
        return "";
      },
      [](const Node& n, const Tensors&) {
        const Device d = n.device;
        if (n.has("value")) return Tensors{tensor_from_proto(n.attr("value")->t(), d)};
        if (n.has("value_float"))
          return Tensors{scalar_tensor(Scalar(n.f("value_float", 0)), {DType::f32, d})};
        if (n.has("value_int"))
          return Tensors{scalar_tensor(Scalar(n.i("value_int", 0)), {DType::i64, d})};
        if (n.has("value_ints")) {
          auto v = n.ints("value_ints");
          return Tensors{i64_tensor(v, {int64_t(v.size())}, d)};
        }
        std::vector<float> v;
        for (double f : n.floats("value_floats")) v.push_back(float(f));
        return Tensors{from_vector<float>(v, {int64_t(v.size())}, d)};
      }};
  r["Shape"] = {attrs({"start", "end"}), [](const Node& n, const Tensors& in) {
                  const int64_t rank = in[0].dim();
                  int64_t s = std::clamp<int64_t>(wrap(n.i("start", 0), rank), 0, rank);
                  int64_t e = std::clamp<int64_t>(wrap(n.i("end", rank), rank), 0, rank);
                  std::vector<int64_t> v;
                  for (int64_t k = s; k < e; ++k) v.push_back(in[0].size(k));
                  return Tensors{i64_tensor(v, {int64_t(v.size())}, in[0].device())};
                }};
  r["Size"] = {ok, [](const Node&, const Tensors& in) {
                 return Tensors{scalar_tensor(Scalar(in[0].numel()), {DType::i64, in[0].device()})};
               }};
  r["ConstantOfShape"] = {attrs({"value"}), [](const Node& n, const Tensors& in) {
                            Tensor v = n.has("value")
                                           ? tensor_from_proto(n.attr("value")->t(), in[0].device())
                                           : zeros({1}, {DType::f32, in[0].device()});
                            Tensor out = empty(to_ints(in[0]), {v.dtype(), in[0].device()});
                            out.copy_(v.reshape({}));
                            return Tensors{out};
                          }};
  r["Cast"] = {[](const Node& n) {
                 return n.only_attrs({"to", "saturate"}) + cast_check(n);
               },
               [](const Node& n, const Tensors& in) {
                 DType d;
                 dtype_from_onnx(int32_t(n.i("to", 0)), d);
                 return Tensors{in[0].to(d)};
               }};
  r["CastLike"] = {[](const Node& n) { return n.only_attrs({"saturate"}) + cast_check(n); },
                   [](const Node&, const Tensors& in) { return Tensors{in[0].to(in[1].dtype())}; }};

  // ---- shape manipulation ----
  r["Reshape"] = {attrs({"allowzero"}), [](const Node& n, const Tensors& in) {
                    auto shape = to_ints(in[1]);
                    if (!n.i("allowzero", 0))
                      for (size_t k = 0; k < shape.size(); ++k)
                        if (shape[k] == 0) shape[k] = in[0].size(int64_t(k));
                    return Tensors{in[0].reshape(shape)};
                  }};
  r["Flatten"] = {attrs({"axis"}), [](const Node& n, const Tensors& in) {
                    const int64_t axis = wrap(n.i("axis", 1), in[0].dim());
                    int64_t outer = 1;
                    for (int64_t d = 0; d < axis; ++d) outer *= in[0].size(d);
                    int64_t inner = 1;
                    for (int64_t d = axis; d < in[0].dim(); ++d) inner *= in[0].size(d);
                    return Tensors{in[0].reshape({outer, inner})};
                  }};
  r["Squeeze"] = {attrs({"axes"}), [](const Node& n, const Tensors& in) {
                    std::vector<int64_t> axes =
                        n.opset >= 13 ? (in.size() > 1 && in[1].defined() ? to_ints(in[1])
                                                                          : std::vector<int64_t>{})
                                      : n.ints("axes");
                    if (axes.empty()) return Tensors{in[0].squeeze()};
                    for (auto& a : axes) a = wrap(a, in[0].dim());
                    std::sort(axes.rbegin(), axes.rend());
                    Tensor y = in[0];
                    for (int64_t a : axes) y = y.squeeze(a);
                    return Tensors{y};
                  }};
  r["Unsqueeze"] = {attrs({"axes"}), [](const Node& n, const Tensors& in) {
                      auto axes = n.opset >= 13 ? to_ints(in[1]) : n.ints("axes");
                      const int64_t out_rank = in[0].dim() + int64_t(axes.size());
                      for (auto& a : axes) a = wrap(a, out_rank);
                      std::sort(axes.begin(), axes.end());
                      Tensor y = in[0];
                      for (int64_t a : axes) y = y.unsqueeze(a);
                      return Tensors{y};
                    }};
  r["Transpose"] = {attrs({"perm"}), [](const Node& n, const Tensors& in) {
                      std::vector<int64_t> perm;
                      for (int64_t d = in[0].dim() - 1; d >= 0; --d) perm.push_back(d);
                      return Tensors{in[0].permute(n.ints("perm", perm))};
                    }};
  r["Concat"] = {attrs({"axis"}), [](const Node& n, const Tensors& in) {
                   return Tensors{cat(in, wrap(n.i("axis", 0), in[0].dim()))};
                 }};
  r["Split"] = {attrs({"axis", "split", "num_outputs"}), [](const Node& n, const Tensors& in) {
                  const int64_t axis = wrap(n.i("axis", 0), in[0].dim());
                  std::vector<int64_t> sizes =
                      n.opset >= 13 ? (in.size() > 1 && in[1].defined() ? to_ints(in[1])
                                                                        : std::vector<int64_t>{})
                                    : n.ints("split");
                  if (!sizes.empty()) return split(in[0], sizes, axis);
                  const int64_t parts =
                      n.has("num_outputs") ? n.i("num_outputs", 1) : int64_t(n.proto.output_size());
                  const int64_t len = in[0].size(axis);
                  return split(in[0], (len + parts - 1) / parts, axis);
                }};
  r["Expand"] = {ok, [](const Node&, const Tensors& in) {
                   Shape s = broadcast_shapes(in[0].shape(), to_ints(in[1]), "Expand");
                   return Tensors{in[0].expand(s)};
                 }};
  r["Tile"] = {ok,
               [](const Node&, const Tensors& in) { return Tensors{tile(in[0], to_ints(in[1]))}; }};
  r["Slice"] = {attrs({"starts", "ends", "axes"}), [](const Node& n, const Tensors& in) {
                  std::vector<int64_t> starts, ends, axes, steps;
                  if (n.opset < 10) {
                    starts = n.ints("starts");
                    ends = n.ints("ends");
                    axes = n.ints("axes");
                  } else {
                    starts = to_ints(in[1]);
                    ends = to_ints(in[2]);
                    if (in.size() > 3 && in[3].defined()) axes = to_ints(in[3]);
                    if (in.size() > 4 && in[4].defined()) steps = to_ints(in[4]);
                  }
                  if (axes.empty())
                    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(int64_t(k));
                  if (steps.empty()) steps.assign(starts.size(), 1);
                  Tensor y = in[0];
                  for (size_t k = 0; k < axes.size(); ++k)
                    y = slice_axis(y, wrap(axes[k], y.dim()), starts[k], ends[k], steps[k]);
                  return Tensors{y};
                }};
  r["Pad"] = {[](const Node& n) -> std::string {
                std::string mode = n.s("mode", "constant");
                if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
                  return "mode " + mode;
                return n.only_attrs({"mode", "pads", "value"});
              },
              [](const Node& n, const Tensors& in) {
                const Tensor& x = in[0];
                const int64_t rank = x.dim();
                std::vector<int64_t> pads;
                double value = 0.0;
                if (n.opset < 11) {
                  pads = n.ints("pads");
                  value = n.f("value", 0.0);
                } else {
                  pads = to_ints(in[1]);
                  if (in.size() > 2 && in[2].defined() && in[2].numel() > 0)
                    value = to_doubles(in[2])[0];
                }
                std::vector<int64_t> axes;
                if (in.size() > 3 && in[3].defined()) {
                  axes = to_ints(in[3]);
                  for (auto& a : axes) a = wrap(a, rank);
                } else {
                  for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
                }
                // ONNX: [b_0, b_1, ..., e_0, e_1, ...]; Ember (torch): last dim first, (b, e).
                std::vector<int64_t> begin(size_t(rank), 0), end(size_t(rank), 0);
                for (size_t k = 0; k < axes.size(); ++k) {
                  begin[size_t(axes[k])] = pads[k];
                  end[size_t(axes[k])] = pads[k + axes.size()];
                }
                std::vector<int64_t> p;
                for (int64_t d = rank - 1; d >= 0; --d) {
                  p.push_back(begin[size_t(d)]);
                  p.push_back(end[size_t(d)]);
                }
                std::string mode = n.s("mode", "constant");
                if (mode == "edge") mode = "replicate";
                if (mode == "wrap") mode = "circular";
                return Tensors{pad(x, p, mode, value)};
              }};
  r["Trilu"] = {attrs({"upper"}), [](const Node& n, const Tensors& in) {
                  int64_t k = in.size() > 1 && in[1].defined() ? to_ints(in[1]).at(0) : 0;
                  return Tensors{n.i("upper", 1) ? triu(in[0], k) : tril(in[0], k)};
                }};
  r["DepthToSpace"] = {
      [](const Node& n) -> std::string {
        std::string mode = n.s("mode", "DCR");
        if (mode != "DCR" && mode != "CRD") return "mode " + mode;
        return n.only_attrs({"blocksize", "mode"});
      },
      [](const Node& n, const Tensors& in) {
        return Tensors{depth_to_space(in[0], n.i("blocksize", 1), n.s("mode", "DCR") == "CRD")};
      }};
  r["SpaceToDepth"] = {
      attrs({"blocksize"}), [](const Node& n, const Tensors& in) {
        const Tensor& x = in[0];
        const int64_t b = n.i("blocksize", 1);
        const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
        Tensor y = x.reshape({N, C, H / b, b, W / b, b}).permute({0, 3, 5, 1, 2, 4});
        return Tensors{y.reshape({N, C * b * b, H / b, W / b})};
      }};

  // ---- indexing ----
  r["Gather"] = {attrs({"axis"}), [](const Node& n, const Tensors& in) {
                   const Tensor& x = in[0];
                   const int64_t axis = wrap(n.i("axis", 0), x.dim());
                   Tensor idx = checked_indices(in[1], x.size(axis), "Gather", axis);
                   Tensor y = index_select(x, axis, idx.reshape({idx.numel()}));
                   Shape s(x.shape().begin(), x.shape().begin() + axis);
                   s.insert(s.end(), idx.shape().begin(), idx.shape().end());
                   s.insert(s.end(), x.shape().begin() + axis + 1, x.shape().end());
                   return Tensors{y.reshape(s)};
                 }};
  r["GatherElements"] = {
      attrs({"axis"}), [](const Node& n, const Tensors& in) {
        const int64_t axis = wrap(n.i("axis", 0), in[0].dim());
        return Tensors{
            gather(in[0], axis, checked_indices(in[1], in[0].size(axis), "GatherElements", axis))};
      }};
  auto scatter_check = [](const Node& n) -> std::string {
    std::string red = n.s("reduction", "none");
    if (red != "none" && red != "add" && red != "mul" && red != "max" && red != "min")
      return "reduction " + red;
    return n.only_attrs({"axis", "reduction"});
  };
  auto scatter_run = [](const Node& n, const Tensors& in) {
    const int64_t axis = wrap(n.i("axis", 0), in[0].dim());
    Tensor idx = checked_indices(in[1], in[0].size(axis), n.proto.op_type().c_str(), axis);
    std::string red = n.s("reduction", "none");
    if (red == "none") return Tensors{scatter(in[0], axis, idx, in[2])};
    const char* torch_red = red == "add"   ? "sum"
                            : red == "mul" ? "prod"
                            : red == "max" ? "amax"
                                           : "amin";
    return Tensors{scatter_reduce(in[0], axis, idx, in[2], torch_red, true)};
  };
  r["ScatterElements"] = {scatter_check, scatter_run};
  r["Scatter"] = {scatter_check, scatter_run};
  r["GatherND"] = {
      attrs({"batch_dims"}), [](const Node& n, const Tensors& in) {
        Tensor x = in[0], ind = in[1];
        // batch_dims b: the first b dims of data and indices pair up; flatten them into one and
        // index it by position (an arange) ahead of the index tuples.
        const int64_t b = n.i("batch_dims", 0);
        const Shape batch(x.shape().begin(), x.shape().begin() + b);
        std::vector<Tensor> idx;
        if (b > 0) {
          int64_t nb = 1;
          for (int64_t d : batch) nb *= d;
          Shape xs(x.shape().begin() + b, x.shape().end()),
              is(ind.shape().begin() + b, ind.shape().end());
          xs.insert(xs.begin(), nb);
          is.insert(is.begin(), nb);
          x = x.reshape(xs);
          ind = ind.reshape(is);
          Shape as(size_t(ind.dim() - 1), 1);
          as[0] = nb;
          idx.push_back(
              arange(Scalar(0), Scalar(nb), Scalar(1), {DType::i64, x.device()}).reshape(as));
        }
        const int64_t m = ind.size(-1), first = b > 0 ? 1 : 0;
        for (int64_t k = 0; k < m; ++k)
          idx.push_back(wrap_indices(ind.select(-1, k), x.size(first + k)));
        Tensor y = index(x, idx);
        if (b == 0) return Tensors{y};
        Shape ys = batch;
        ys.insert(ys.end(), y.shape().begin() + 1, y.shape().end());
        return Tensors{y.reshape(ys)};
      }};
  r["ScatterND"] = {
      [](const Node& n) -> std::string {
        std::string red = n.s("reduction", "none");
        if (red != "none" && red != "add" && red != "mul" && red != "max" && red != "min")
          return "reduction " + red;
        return n.only_attrs({"reduction"});
      },
      [](const Node& n, const Tensors& in) {
        const int64_t m = in[1].size(-1);
        const std::string red = n.s("reduction", "none");
        if (red == "mul" || red == "max" || red == "min") return scatter_nd_reduce(in, red);
        std::vector<Tensor> idx;
        for (int64_t k = 0; k < m; ++k)
          idx.push_back(wrap_indices(in[1].select(-1, k), in[0].size(k)));
        return Tensors{index_put(in[0], idx, in[2], n.s("reduction", "none") == "add")};
      }};
  r["Compress"] = {attrs({"axis"}), [](const Node& n, const Tensors& in) {
                     Tensor x = n.has("axis") ? in[0] : in[0].reshape({in[0].numel()});
                     const int64_t axis = n.has("axis") ? wrap(n.i("axis", 0), in[0].dim()) : 0;
                     Tensor sel = nonzero(in[1].to(DType::b8)).reshape({-1});
                     return Tensors{index_select(x, axis, sel)};
                   }};
  r["NonZero"] = {
      ok, [](const Node&, const Tensors& in) { return Tensors{nonzero(in[0]).t().contiguous()}; }};
  r["OneHot"] = {attrs({"axis"}), [](const Node& n, const Tensors& in) {
                   const int64_t depth = to_ints(in[1]).at(0);
                   Tensor idx = wrap_indices(in[0].to(DType::i64), depth);
                   Tensor oh = one_hot(idx, depth);  // [..., depth]
                   const int64_t rank = oh.dim();
                   const int64_t axis = wrap(n.i("axis", -1), rank);
                   if (axis != rank - 1) {
                     std::vector<int64_t> perm;
                     for (int64_t d = 0; d < rank - 1; ++d) perm.push_back(d);
                     perm.insert(perm.begin() + axis, rank - 1);
                     oh = oh.permute(perm);
                   }
                   const Tensor& v = in[2];
                   return Tensors{where(eq(oh, Scalar(1)), v.select(0, 1), v.select(0, 0))};
                 }};
  r["Range"] = {
      ok, [](const Node&, const Tensors& in) {
        const DType d = in[0].dtype();
        if (is_floating(d)) {
          return Tensors{arange_typed(Scalar(to_doubles(in[0])[0]), Scalar(to_doubles(in[1])[0]),
                                      Scalar(to_doubles(in[2])[0]), d, in[0].device())};
        }
        return Tensors{arange_typed(Scalar(to_ints(in[0])[0]), Scalar(to_ints(in[1])[0]),
                                    Scalar(to_ints(in[2])[0]), d, in[0].device())};
      }};
  r["EyeLike"] = {attrs({"dtype", "k"}), [](const Node& n, const Tensors& in) {
                    DType d = in[0].dtype();
                    if (n.has("dtype")) dtype_from_onnx(int32_t(n.i("dtype", 0)), d);
                    const int64_t k = n.i("k", 0);
                    Tensor o = ones(in[0].shape(), {d, in[0].device()});
                    return Tensors{tril(triu(o, k), k)};
                  }};
}

}  // namespace ember::onnx::detail
