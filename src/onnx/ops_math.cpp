// ONNX element-wise, reduction and scan ops mapped onto ember/ops/{elementwise,reduce,linalg}.h.
#include <cmath>

#include "onnx/ops.h"
#include "onnx/proto.h"

namespace ember::onnx::detail {
namespace F = ember::nn::functional;
namespace {

using Fn1 = Tensor (*)(const Tensor&);

OpImpl unary(Fn1 fn) {
  return {ok, [fn](const Node&, const Tensors& in) { return Tensors{fn(in[0])}; }};
}

// ONNX keeps the input dtype where torch widens (sums of int32 -> int64): cast back.
Tensor like(const Tensor& t, DType d) { return t.dtype() == d ? t : t.to(d); }

Tensor fold(const Tensors& in, Tensor (*fn)(const Tensor&, const Tensor&)) {
  Tensor acc = in[0];
  for (size_t k = 1; k < in.size(); ++k) acc = fn(acc, in[k]);
  return acc;
}

// ---- reductions: axes from the attribute (or the second input from opset 18, ReduceSum 13) ----
bool axes_from_input(const Node& n) {
  return n.proto.op_type() == "ReduceSum" ? n.opset >= 13 : n.opset >= 18;
}

// Returns false when the reduction is the identity (noop_with_empty_axes and no axes).
bool reduce_dims(const Node& n, const Tensors& in, std::vector<int64_t>& dims) {
  if (axes_from_input(n)) {
    if (in.size() > 1 && in[1].defined()) dims = to_ints(in[1]);
  } else {
    dims = n.ints("axes");
  }
  if (dims.empty() && n.i("noop_with_empty_axes", 0)) return false;
  if (dims.empty())
    for (int64_t d = 0; d < in[0].dim(); ++d) dims.push_back(d);
  return true;
}

using ReduceFn = std::function<Tensor(const Tensor&, const std::vector<int64_t>&, bool)>;
OpImpl reduce(ReduceFn fn, bool keep_dtype) {
  return {attrs({"axes", "keepdims", "noop_with_empty_axes"}),
          [fn, keep_dtype](const Node& n, const Tensors& in) {
            std::vector<int64_t> dims;
            if (!reduce_dims(n, in, dims)) return Tensors{in[0]};
            Tensor y = fn(in[0], dims, n.i("keepdims", 1) != 0);
            return Tensors{keep_dtype ? like(y, in[0].dtype()) : y};
          }};
}

OpImpl arg_reduce(bool is_max) {
  return {attrs({"axis", "keepdims", "select_last_index"}),
          [is_max](const Node& n, const Tensors& in) {
            const Tensor& x = in[0];
            const int64_t axis = wrap(n.i("axis", 0), x.dim());
            const bool keep = n.i("keepdims", 1) != 0;
            if (!n.i("select_last_index", 0))
              return Tensors{is_max ? argmax(x, axis, keep) : argmin(x, axis, keep)};
            // Last index of the extreme = (size - 1) - first index in the flipped tensor.
            Tensor f = x.flip({axis});
            Tensor i = is_max ? argmax(f, axis, keep) : argmin(f, axis, keep);
            return Tensors{sub(full_like(i, x.size(axis) - 1), i)};
          }};
}

// ---- softmax family (opset < 13 flattens to 2-d at `axis`, default 1; 13+: one axis, -1) ----
Tensor coerced(const Node& n, const Tensor& x,
               const std::function<Tensor(const Tensor&, int64_t)>& f) {
  const bool old = n.opset < 13;
  int64_t axis = wrap(n.i("axis", old ? 1 : -1), x.dim());
  if (!old) return f(x, axis);
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.size(d);
  Tensor y = f(x.reshape({outer, x.numel() / std::max<int64_t>(outer, 1)}), 1);
  return y.reshape(x.shape());
}

Tensor hardmax_axis(const Tensor& x, int64_t axis) {
  Tensor idx = argmax(x, axis, true);
  return scatter(zeros_like(x), axis, idx, Scalar(1));
}

}  // namespace

void register_math_ops(std::map<std::string, OpImpl>& r) {
  // ---- unary math ----
  r["Abs"] = unary(abs);
  r["Neg"] = unary(neg);
  r["Exp"] = unary(exp);
  r["Log"] = unary(log);
  r["Sqrt"] = unary(sqrt);
  r["Sin"] = unary(sin);
  r["Cos"] = unary(cos);
  r["Tan"] = unary(tan);
  r["Asin"] = unary(asin);
  r["Acos"] = unary(acos);
  r["Atan"] = unary(atan);
  r["Sinh"] = unary(sinh);
  r["Cosh"] = unary(cosh);
  r["Tanh"] = unary(tanh);
  r["Asinh"] = unary(asinh);
  r["Acosh"] = unary(acosh);
  r["Atanh"] = unary(atanh);
  r["Erf"] = unary(erf);
  r["Floor"] = unary(floor);
  r["Ceil"] = unary(ceil);
  r["Round"] = unary(round);
  r["Sign"] = unary(sign);
  r["Reciprocal"] = unary(reciprocal);
  r["IsNaN"] = unary(isnan);
  r["Not"] = unary(logical_not);
  r["BitwiseNot"] = unary(bitwise_not);
  r["Identity"] = {ok, [](const Node&, const Tensors& in) { return Tensors{in[0]}; }};
  r["IsInf"] = {attrs({"detect_positive", "detect_negative"}),
                [](const Node& n, const Tensors& in) {
                  Tensor inf = isinf(in[0]);
                  if (!n.i("detect_positive", 1)) inf = logical_and(inf, lt(in[0], Scalar(0)));
                  if (!n.i("detect_negative", 1)) inf = logical_and(inf, gt(in[0], Scalar(0)));
                  return Tensors{inf};
                }};

  // ---- binary (ONNX: both operands of one type, multidirectional broadcasting) ----
  // A one-element constant operand (a layer norm's epsilon, a scale) is a Scalar: a constant
  // node in a fused graph, not a broadcast load, and pow(x, 2) becomes x * x.
  r["Add"] = {ok, [](const Node& n, const Tensors& in) {
                if (auto c = n.scalar_input(1, in[0])) return Tensors{add(in[0], *c)};
                if (auto c = n.scalar_input(0, in[1])) return Tensors{add(in[1], *c)};
                return Tensors{add(in[0], in[1])};
              }};
  r["Sub"] = {ok, [](const Node& n, const Tensors& in) {
                if (auto c = n.scalar_input(1, in[0])) return Tensors{sub(in[0], *c)};
                return Tensors{sub(in[0], in[1])};
              }};
  r["Mul"] = {ok, [](const Node& n, const Tensors& in) {
                if (auto c = n.scalar_input(1, in[0])) return Tensors{mul(in[0], *c)};
                if (auto c = n.scalar_input(0, in[1])) return Tensors{mul(in[1], *c)};
                return Tensors{mul(in[0], in[1])};
              }};
  r["Div"] = {ok, [](const Node& n, const Tensors& in) {
                // Integer Div truncates (C semantics, as the ONNX reference for uint8/int32).
                bool integral = !is_floating(in[0].dtype());
                if (integral) return Tensors{div(in[0], in[1], "trunc")};
                if (auto c = n.scalar_input(1, in[0])) return Tensors{div(in[0], *c)};
                return Tensors{div(in[0], in[1])};
              }};
  r["Pow"] = {ok, [](const Node& n, const Tensors& in) {
                if (auto c = n.scalar_input(1, in[0], true)) return Tensors{pow(in[0], *c)};
                // The result has the base's type (ONNX), whatever the exponent's.
                return Tensors{like(pow(in[0], in[1]), in[0].dtype())};
              }};
  r["Mod"] = {attrs({"fmod"}), [](const Node& n, const Tensors& in) {
                return Tensors{n.i("fmod", 0) ? fmod(in[0], in[1]) : remainder(in[0], in[1])};
              }};
  r["Min"] = {ok, [](const Node&, const Tensors& in) { return Tensors{fold(in, minimum)}; }};
  r["Max"] = {ok, [](const Node&, const Tensors& in) { return Tensors{fold(in, maximum)}; }};
  r["Sum"] = {
      ok, [](const Node&, const Tensors& in) {
        return Tensors{fold(in, [](const Tensor& a, const Tensor& b) { return add(a, b); })};
      }};
  r["Mean"] = {ok, [](const Node&, const Tensors& in) {
                 Tensor s = fold(in, [](const Tensor& a, const Tensor& b) { return add(a, b); });
                 return Tensors{div(s, Scalar(int64_t(in.size())))};
               }};
  auto cmp = [](Tensor (*fn)(const Tensor&, const Tensor&)) {
    return OpImpl{ok, [fn](const Node&, const Tensors& in) { return Tensors{fn(in[0], in[1])}; }};
  };
  r["Equal"] = cmp(eq);
  r["Less"] = cmp(lt);
  r["LessOrEqual"] = cmp(le);
  r["Greater"] = cmp(gt);
  r["GreaterOrEqual"] = cmp(ge);
  r["And"] = cmp(logical_and);
  r["Or"] = cmp(logical_or);
  r["Xor"] = cmp(logical_xor);
  r["BitwiseAnd"] = cmp(bitwise_and);
  r["BitwiseOr"] = cmp(bitwise_or);
  r["BitwiseXor"] = cmp(bitwise_xor);
  r["BitShift"] = {
      attrs({"direction"}), [](const Node& n, const Tensors& in) {
        bool left = n.s("direction", "") == "LEFT";
        return Tensors{left ? bitwise_left_shift(in[0], in[1]) : bitwise_right_shift(in[0], in[1])};
      }};
  r["Where"] = {ok,
                [](const Node&, const Tensors& in) { return Tensors{where(in[0], in[1], in[2])}; }};
  r["Clip"] = {
      attrs({"min", "max"}), [](const Node& n, const Tensors& in) {
        const Tensor& x = in[0];
        if (n.opset < 11) {  // bounds are attributes
          double lo = n.f("min", -INFINITY), hi = n.f("max", INFINITY);
          return Tensors{clamp(x, Scalar(lo), Scalar(hi))};
        }
        Tensor lo = in.size() > 1 ? in[1] : Tensor();
        Tensor hi = in.size() > 2 ? in[2] : Tensor();
        // No bounds: the identity (torch.clamp would throw).
        if (!lo.defined() && !hi.defined()) return Tensors{x};
        // One-value constant bounds (ReLU6 and friends): a scalar clamp, one
        // element-wise op that fuses into a convolution's epilogue, instead of a
        // maximum and a minimum with broadcast tensors.
        const std::optional<Scalar> l = lo.defined() ? n.scalar_input(1, x) : Scalar(-INFINITY);
        const std::optional<Scalar> h = hi.defined() ? n.scalar_input(2, x) : Scalar(INFINITY);
        if (l && h && !std::isnan(l->to_double()) && !std::isnan(h->to_double()))
          return Tensors{clamp(x, *l, *h)};
        return Tensors{clamp(x, lo, hi)};
      }};

  // ---- activations ----
  r["Relu"] = unary(F::relu);
  r["Sigmoid"] = unary(F::sigmoid);
  r["Softsign"] = unary(F::softsign);
  r["HardSwish"] = unary(F::hardswish);
  r["Mish"] = unary(F::mish);
  r["Softplus"] = unary([](const Tensor& x) { return F::softplus(x); });
  r["Elu"] = {attrs({"alpha"}), [](const Node& n, const Tensors& in) {
                return Tensors{F::elu(in[0], n.f("alpha", 1.0))};
              }};
  r["Celu"] = {attrs({"alpha"}), [](const Node& n, const Tensors& in) {
                 return Tensors{F::celu(in[0], n.f("alpha", 1.0))};
               }};
  r["LeakyRelu"] = {attrs({"alpha"}), [](const Node& n, const Tensors& in) {
                      return Tensors{F::leaky_relu(in[0], n.f("alpha", 0.01))};
                    }};
  r["ThresholdedRelu"] = {attrs({"alpha"}), [](const Node& n, const Tensors& in) {
                            return Tensors{F::threshold(in[0], n.f("alpha", 1.0), 0.0)};
                          }};
  r["Selu"] = {attrs({"alpha", "gamma"}), [](const Node& n, const Tensors& in) {
                 const double alpha = n.f("alpha", 1.67326319217681884765625);
                 const double gamma = n.f("gamma", 1.05070102214813232421875);
                 if (!n.has("alpha") && !n.has("gamma")) return Tensors{F::selu(in[0])};
                 return Tensors{mul(F::elu(in[0], alpha), Scalar(gamma))};
               }};
  r["HardSigmoid"] = {
      attrs({"alpha", "beta"}), [](const Node& n, const Tensors& in) {
        const double a = n.f("alpha", 0.2), b = n.f("beta", 0.5);
        return Tensors{clamp(add(mul(in[0], Scalar(a)), Scalar(b)), Scalar(0.0), Scalar(1.0))};
      }};
  r["Shrink"] = {attrs({"bias", "lambd"}), [](const Node& n, const Tensors& in) {
                   const double bias = n.f("bias", 0.0), lambd = n.f("lambd", 0.5);
                   const Tensor& x = in[0];
                   if (bias == 0.0) return Tensors{F::hardshrink(x, lambd)};
                   if (bias == lambd) return Tensors{F::softshrink(x, lambd)};
                   Tensor y = where(lt(x, Scalar(-lambd)), add(x, Scalar(bias)), zeros_like(x));
                   return Tensors{where(gt(x, Scalar(lambd)), sub(x, Scalar(bias)), y)};
                 }};
  r["PRelu"] = {ok, [](const Node& n, const Tensors& in) {
                  // The slope broadcasts unidirectionally to X (any shape), so not F::prelu.
                  // Before opset 7 a 1-d slope of X's channel count is per channel (dim 1).
                  Tensor slope = in[1];
                  if (n.opset < 7 && slope.dim() == 1 && in[0].dim() >= 2 &&
                      slope.size(0) == in[0].size(1) && slope.size(0) != 1) {
                    Shape s(size_t(in[0].dim() - 1), 1);
                    s[0] = slope.size(0);
                    slope = slope.reshape(s);
                  }
                  return Tensors{where(lt(in[0], Scalar(0)), mul(in[0], slope), in[0])};
                }};
  r["Gelu"] = {attrs({"approximate"}), [](const Node& n, const Tensors& in) {
                 return Tensors{F::gelu(in[0], n.s("approximate", "none"))};
               }};
  r["Softmax"] = {attrs({"axis"}), [](const Node& n, const Tensors& in) {
                    return Tensors{coerced(
                        n, in[0], [](const Tensor& x, int64_t d) { return F::softmax(x, d); })};
                  }};
  r["LogSoftmax"] = {attrs({"axis"}), [](const Node& n, const Tensors& in) {
                       return Tensors{coerced(n, in[0], [](const Tensor& x, int64_t d) {
                         return F::log_softmax(x, d);
                       })};
                     }};
  r["Hardmax"] = {attrs({"axis"}), [](const Node& n, const Tensors& in) {
                    return Tensors{coerced(n, in[0], hardmax_axis)};
                  }};

  // ---- reductions ----
  r["ReduceSum"] = reduce([](const Tensor& x, auto d, bool k) { return sum(x, d, k); }, true);
  r["ReduceMean"] = reduce([](const Tensor& x, auto d, bool k) { return mean(x, d, k); }, true);
  r["ReduceMax"] = reduce([](const Tensor& x, auto d, bool k) { return amax(x, d, k); }, true);
  r["ReduceMin"] = reduce([](const Tensor& x, auto d, bool k) { return amin(x, d, k); }, true);
  r["ReduceProd"] = reduce([](const Tensor& x, auto d, bool k) { return prod(x, d, k); }, true);
  r["ReduceL1"] = reduce([](const Tensor& x, auto d, bool k) { return norm(x, 1.0, d, k); }, true);
  r["ReduceL2"] = reduce([](const Tensor& x, auto d, bool k) { return norm(x, 2.0, d, k); }, true);
  r["ReduceSumSquare"] =
      reduce([](const Tensor& x, auto d, bool k) { return sum(mul(x, x), d, k); }, true);
  r["ReduceLogSum"] =
      reduce([](const Tensor& x, auto d, bool k) { return log(sum(x, d, k)); }, true);
  r["ReduceLogSumExp"] =
      reduce([](const Tensor& x, auto d, bool k) { return logsumexp(x, d, k); }, true);
  r["ArgMax"] = arg_reduce(true);
  r["ArgMin"] = arg_reduce(false);
  r["CumSum"] = {attrs({"exclusive", "reverse"}), [](const Node& n, const Tensors& in) {
                   const Tensor& x = in[0];
                   const int64_t axis = wrap(to_ints(in[1]).at(0), x.dim());
                   Tensor v = n.i("reverse", 0) ? x.flip({axis}) : x;
                   Tensor c = cumsum(v, axis);
                   if (n.i("exclusive", 0)) {
                     // Shift by one along axis: a zero first, the inclusive sums but the last.
                     Shape zs = c.shape();
                     zs[size_t(axis)] = std::min<int64_t>(1, zs[size_t(axis)]);
                     c = cat({zeros(zs, TensorOptions(c.dtype(), c.device())),
                              c.slice(axis, 0, c.size(axis) - 1)},
                             axis);
                   }
                   if (n.i("reverse", 0)) c = c.flip({axis});
                   return Tensors{like(c, x.dtype())};
                 }};
  r["TopK"] = {attrs({"axis", "largest", "sorted"}), [](const Node& n, const Tensors& in) {
                 const int64_t k = to_ints(in[1]).at(0);
                 auto [v, i] =
                     topk(in[0], k, n.i("axis", -1), n.i("largest", 1) != 0, n.i("sorted", 1) != 0);
                 return Tensors{v, i};
               }};

  // ---- linear algebra ----
  r["MatMul"] = {ok, [](const Node&, const Tensors& in) { return Tensors{matmul(in[0], in[1])}; }};
  // Before opset 7, `broadcast` said whether C broadcasts; C always does here (numpy rules).
  r["Gemm"] = {attrs({"alpha", "beta", "transA", "transB", "broadcast"}),
               [](const Node& n, const Tensors& in) {
                 Tensor a = n.i("transA", 0) ? in[0].t() : in[0];
                 Tensor b = n.i("transB", 0) ? in[1].t() : in[1];
                 Tensor y = mul(matmul(a, b), Scalar(n.f("alpha", 1.0)));
                 if (in.size() > 2 && in[2].defined())
                   y = add(y, mul(in[2], Scalar(n.f("beta", 1.0))));
                 return Tensors{like(y, in[0].dtype())};
               }};
}

}  // namespace ember::onnx::detail
