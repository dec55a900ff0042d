// ONNX recurrent ops (LSTM, GRU, RNN; the equations of the ONNX operator specs, opsets 7-14)
// unrolled over time with Ember's tensor ops: forward, reverse and bidirectional, layout 0 and 1,
// sequence_lens (steps past a batch entry's length keep its state and output zeros), LSTM
// peepholes, GRU linear_before_reset. Activations other than the defaults, clip and input_forget
// are reported unsupported at load time.
#include "onnx/ops.h"

namespace ember::onnx::detail {
namespace F = ember::nn::functional;
namespace {

enum class Cell { lstm, gru, rnn };

const std::vector<std::string>& default_activations(Cell c) {
  static const std::vector<std::string> lstm{"Sigmoid", "Tanh", "Tanh"}, gru{"Sigmoid", "Tanh"},
      rnn{"Tanh"};
  return c == Cell::lstm ? lstm : c == Cell::gru ? gru : rnn;
}

std::function<std::string(const Node&)> check_of(Cell cell) {
  return [cell](const Node& n) -> std::string {
    if (n.has("clip")) return "clip";
    if (n.i("input_forget", 0) != 0) return "input_forget";
    if (n.has("activation_alpha") || n.has("activation_beta")) return "activation_alpha/beta";
    if (n.has("activations")) {
      const std::vector<std::string>& d = default_activations(cell);
      const auto* a = n.attr("activations");
      for (int k = 0; k < a->strings_size(); ++k)
        if (a->strings(k) != d[size_t(k) % d.size()])
          return "activation " + a->strings(k) + " (only the defaults are mapped)";
    }
    const std::string dir = n.s("direction", "forward");
    if (dir != "forward" && dir != "reverse" && dir != "bidirectional") return "direction " + dir;
    return n.only_attrs(
        {"activations", "direction", "hidden_size", "layout", "linear_before_reset"});
  };
}

// The rows [k * h, (k + 1) * h) of a [G * H, ...] or [G * H] tensor: gate k.
Tensor gate(const Tensor& t, int64_t k, int64_t h) { return t.narrow(0, k * h, h); }

Tensors run_rnn(Cell cell, const Node& n, const Tensors& in) {
  const int64_t layout = n.i("layout", 0);
  Tensor x = in[0];  // [seq, batch, input] (layout 1: [batch, seq, input])
  if (layout == 1) x = x.transpose(0, 1);
  const Tensor& w = in[1];  // [dirs, G * H, input]
  const Tensor& r = in[2];  // [dirs, G * H, H]
  const int64_t dirs = w.size(0), gates = cell == Cell::lstm ? 4 : cell == Cell::gru ? 3 : 1;
  const int64_t hidden = r.size(2), seq = x.size(0), batch = x.size(1);
  EMBER_CHECK(n.i("hidden_size", hidden) == hidden, "onnx", n.proto.op_type(), ": hidden_size ",
              n.i("hidden_size", hidden), " but R is ", shape_str(r.shape()));
  auto opt = [&](size_t k) { return n.has_input(k) && k < in.size() ? in[k] : Tensor(); };
  const Tensor b = opt(3), lens = opt(4), h0 = opt(5), c0 = opt(6), p = opt(7);
  auto initial = [&](const Tensor& s, int64_t d) {
    if (!s.defined()) return zeros({batch, hidden}, {x.dtype(), x.device()});
    return layout == 1 ? s.select(1, d) : s.select(0, d);  // [batch, H]
  };
  Tensor steps;  // [seq, batch, 1] bool: step t counts for batch entry b
  if (lens.defined()) {
    const Tensor t = arange(Scalar(0), Scalar(seq), Scalar(1), {DType::i64, x.device()});
    steps = lt(t.reshape({seq, 1, 1}), lens.to(DType::i64).reshape({1, batch, 1}));
  }
  const std::string direction = n.s("direction", "forward");
  const bool linear_before_reset = n.i("linear_before_reset", 0) != 0;
  std::vector<Tensor> ys, hs, cs;
  for (int64_t d = 0; d < dirs; ++d) {
    const bool reverse = direction == "reverse" || (direction == "bidirectional" && d == 1);
    const Tensor wd = w.select(0, d), rd = r.select(0, d);
    // The input projection of every step at once: [seq, batch, G * H].
    Tensor xw = matmul(x, wd.t());
    Tensor rb;  // R's bias, added per step (GRU's h gate needs it apart)
    if (b.defined()) {
      const Tensor bd = b.select(0, d);
      xw = add(xw, bd.narrow(0, 0, gates * hidden));
      rb = bd.narrow(0, gates * hidden, gates * hidden);
    }
    Tensor h = initial(h0, d), c = initial(c0, d);
    std::vector<Tensor> out(static_cast<size_t>(seq));
    for (int64_t s = 0; s < seq; ++s) {
      const int64_t t = reverse ? seq - 1 - s : s;
      const Tensor xt = xw.select(0, t);
      Tensor hn, cn;
      if (cell == Cell::gru) {
        const Tensor xz = xt.narrow(1, 0, hidden), xr = xt.narrow(1, hidden, hidden),
                     xh = xt.narrow(1, 2 * hidden, hidden);
        auto rgate = [&](int64_t k, const Tensor& v) {
          Tensor y = matmul(v, gate(rd, k, hidden).t());
          return rb.defined() ? add(y, gate(rb, k, hidden)) : y;
        };
        const Tensor z = F::sigmoid(add(xz, rgate(0, h)));
        const Tensor rr = F::sigmoid(add(xr, rgate(1, h)));
        const Tensor hh = linear_before_reset ? tanh(add(xh, mul(rr, rgate(2, h))))
                                              : tanh(add(xh, rgate(2, mul(rr, h))));
        hn = add(mul(neg(sub(z, Scalar(1))), hh), mul(z, h));  // (1 - z) * hh + z * h
      } else {
        Tensor g = add(xt, matmul(h, rd.t()));
        if (rb.defined()) g = add(g, rb);
        if (cell == Cell::rnn) {
          hn = tanh(g);
        } else {  // gates i, o, f, c; peepholes P = [i, o, f]
          auto part = [&](int64_t k) { return g.narrow(1, k * hidden, hidden); };
          auto peep = [&](int64_t k, const Tensor& state) {
            return p.defined() ? mul(p.select(0, d).narrow(0, k * hidden, hidden), state)
                               : Tensor();
          };
          auto with = [&](const Tensor& a, const Tensor& pk) {
            return pk.defined() ? add(a, pk) : a;
          };
          const Tensor i = F::sigmoid(with(part(0), peep(0, c)));
          const Tensor f = F::sigmoid(with(part(2), peep(2, c)));
          cn = add(mul(f, c), mul(i, tanh(part(3))));
          const Tensor o = F::sigmoid(with(part(1), peep(1, cn)));
          hn = mul(o, tanh(cn));
        }
      }
      if (steps.defined()) {  // past its length an entry keeps its state and outputs 0
        const Tensor m = steps.select(0, t);
        out[size_t(t)] = where(m, hn, Scalar(0));
        h = where(m, hn, h);
        if (cn.defined()) c = where(m, cn, c);
      } else {
        out[size_t(t)] = hn;
        h = hn;
        if (cn.defined()) c = cn;
      }
    }
    ys.push_back(stack(out, 0));  // [seq, batch, H]
    hs.push_back(h);
    cs.push_back(c);
  }
  Tensor y = stack(ys, 1);                      // [seq, dirs, batch, H]
  Tensor yh = stack(hs, 0), yc = stack(cs, 0);  // [dirs, batch, H]
  if (layout == 1) {
    y = y.permute({2, 0, 1, 3});  // [batch, seq, dirs, H]
    yh = yh.transpose(0, 1);
    yc = yc.transpose(0, 1);
  }
  Tensors outs{y, yh};
  if (cell == Cell::lstm) outs.push_back(yc);
  return outs;
}

}  // namespace

void register_rnn_ops(std::map<std::string, OpImpl>& r) {
  for (const auto& [name, cell] :
       {std::pair<const char*, Cell>{"LSTM", Cell::lstm}, {"GRU", Cell::gru}, {"RNN", Cell::rnn}})
    r[name] = {check_of(cell),
               [cell = cell](const Node& n, const Tensors& in) { return run_rnn(cell, n, in); }};
}

}  // namespace ember::onnx::detail
