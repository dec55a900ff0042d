// LSTM and GRU as composites of tensor ops: the input projection of a whole sequence is one
// matmul per layer and direction, then each time step is a matmul with W_hh plus elementwise
// gates, so autodiff and every backend handle them without a dedicated kernel.
#include "ember/nn/modules/rnn.h"

#include <cmath>

#include "ember/autograd.h"
#include "ember/nn/functional/activation.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/layout.h"
#include "ember/ops/linalg.h"
#include "tensor/internal.h"

namespace ember::nn {

RNNBase::RNNBase(const char* type, const RNNOptionsBase& opts, int64_t gates)
    : Module(type), options(opts), gates_(gates) {
  const char* op = type;
  if (opts.input_size() <= 0 || opts.hidden_size() <= 0 || opts.num_layers() <= 0)
    EMBER_FAIL(op, "input_size, hidden_size and num_layers must be positive, got ",
               opts.input_size(), ", ", opts.hidden_size(), ", ", opts.num_layers());
  if (!(opts.dropout() >= 0 && opts.dropout() <= 1))
    EMBER_FAIL(op, "dropout should be a number in range [0, 1], got ", opts.dropout());
  const int64_t h = opts.hidden_size(), d = opts.bidirectional() ? 2 : 1;
  for (int64_t layer = 0; layer < opts.num_layers(); ++layer) {
    const int64_t in = layer == 0 ? opts.input_size() : h * d;
    for (int64_t dir = 0; dir < d; ++dir) {
      const std::string sfx = "_l" + std::to_string(layer) + (dir ? "_reverse" : "");
      std::vector<Tensor> w(4);
      w[0] = register_parameter("weight_ih" + sfx, empty({gates * h, in}));
      w[1] = register_parameter("weight_hh" + sfx, empty({gates * h, h}));
      if (opts.bias()) {
        w[2] = register_parameter("bias_ih" + sfx, empty({gates * h}));
        w[3] = register_parameter("bias_hh" + sfx, empty({gates * h}));
      }
      weights_.push_back(std::move(w));
    }
  }
  reset_parameters();
}

void RNNBase::reset_parameters() {
  NoGradGuard no_grad;
  const double bound = 1.0 / std::sqrt(double(options.hidden_size()));
  for (Tensor& p : parameters(false)) p.uniform_(-bound, bound);
}

std::vector<Tensor> RNNBase::layer_weights(int64_t layer, bool reverse) const {
  const int64_t d = options.bidirectional() ? 2 : 1;
  if (layer < 0 || layer >= options.num_layers() || (reverse && d == 1))
    EMBER_FAIL(type_name().c_str(), "no layer ", layer, reverse ? " (reverse)" : "", " in a ",
               d == 2 ? "bidirectional " : "", "module with ", options.num_layers(), " layer(s)");
  return weights_[size_t(layer * d + (reverse ? 1 : 0))];
}

std::string RNNBase::extra_repr() const {
  std::string s =
      std::to_string(options.input_size()) + ", " + std::to_string(options.hidden_size());
  if (options.num_layers() != 1) s += ", num_layers=" + std::to_string(options.num_layers());
  if (!options.bias()) s += ", bias=False";
  if (options.batch_first()) s += ", batch_first=True";
  if (options.dropout() != 0) s += ", dropout=" + detail::float_str(options.dropout());
  if (options.bidirectional()) s += ", bidirectional=True";
  return s;
}

std::tuple<Tensor, Tensor, Tensor> RNNBase::run(const Tensor& input, const Tensor& h0,
                                                const Tensor& c0, bool has_cell) {
  const char* op = type_name().c_str();
  ember::detail::check_defined(input, op);
  ember::detail::check_floating(input, op);
  const Tensor& w0 = weights_[0][0];
  if (input.dim() != 2 && input.dim() != 3)
    EMBER_FAIL(op, "expected input to be 2-d (unbatched) or 3-d (batched), got shape ",
               shape_str(input.shape()));
  if (input.dtype() != w0.dtype())
    EMBER_FAIL(op, "input dtype ", dtype_name(input.dtype()), " does not match the parameters' ",
               dtype_name(w0.dtype()), " (use Module::to)");
  ember::detail::check_same_device(input, w0, op);
  if (input.size(-1) != options.input_size())
    EMBER_FAIL(op, "input.size(-1) must be equal to input_size. Expected ", options.input_size(),
               ", got ", input.size(-1), " (input ", shape_str(input.shape()), ")");
  const bool batched = input.dim() == 3;
  // Work seq-first [L, N, I].
  Tensor x = batched ? (options.batch_first() ? input.transpose(0, 1) : input) : input.unsqueeze(1);
  const int64_t len = x.size(0), n = x.size(1), h = options.hidden_size();
  const int64_t d = options.bidirectional() ? 2 : 1, layers = options.num_layers();
  if (len == 0)
    EMBER_FAIL(op, "expected sequence length to be larger than 0, got input ",
               shape_str(input.shape()));
  const Shape state_shape = batched ? Shape{d * layers, n, h} : Shape{d * layers, h};
  auto initial = [&](const Tensor& s, const char* name) {
    if (!s.defined()) return zeros({d * layers, n, h}, {w0.dtype(), w0.device()});
    if (s.shape() != state_shape)
      EMBER_FAIL(op, "expected ", name, " of shape ", shape_str(state_shape), ", got ",
                 shape_str(s.shape()), " (input ", shape_str(input.shape()), ")");
    if (s.dtype() != w0.dtype())
      EMBER_FAIL(op, name, " dtype ", dtype_name(s.dtype()), " does not match the parameters' ",
                 dtype_name(w0.dtype()));
    ember::detail::check_same_device(s, w0, op);
    return batched ? s : s.unsqueeze(1);
  };
  if (has_cell && h0.defined() != c0.defined())
    EMBER_FAIL(op, "h_0 and c_0 must be given together");
  Tensor hs0 = initial(h0, "h_0");
  Tensor cs0 = has_cell ? initial(c0, "c_0") : Tensor();

  std::vector<Tensor> h_n, c_n;
  for (int64_t layer = 0; layer < layers; ++layer) {
    std::vector<Tensor> dir_out;
    for (int64_t dir = 0; dir < d; ++dir) {
      const int64_t idx = layer * d + dir;
      const std::vector<Tensor>& w = weights_[size_t(idx)];
      Tensor xw = matmul(x, w[0].t());  // [L, N, G*H]
      if (w[2].defined()) xw = xw + w[2];
      Tensor hh = hs0.select(0, idx), cc = has_cell ? cs0.select(0, idx) : Tensor();
      std::vector<Tensor> outs(static_cast<size_t>(len));
      for (int64_t s = 0; s < len; ++s) {
        const int64_t t = dir ? len - 1 - s : s;
        cell(xw.select(0, t), w, hh, cc);
        outs[size_t(t)] = hh;
      }
      dir_out.push_back(stack(outs, 0));
      h_n.push_back(hh);
      if (has_cell) c_n.push_back(cc);
    }
    x = d == 1 ? dir_out[0] : cat(dir_out, -1);
    if (layer + 1 < layers && options.dropout() > 0 && is_training())
      x = functional::dropout(x, options.dropout(), true);
  }
  Tensor out = batched ? (options.batch_first() ? x.transpose(0, 1) : x) : x.squeeze(1);
  Tensor hn = stack(h_n, 0), cn = has_cell ? stack(c_n, 0) : Tensor();
  if (!batched) {
    hn = hn.squeeze(1);
    if (has_cell) cn = cn.squeeze(1);
  }
  return {out, hn, cn};
}

void LSTM::cell(const Tensor& xw_t, const std::vector<Tensor>& w, Tensor& h, Tensor& c) const {
  const int64_t hs = options.hidden_size();
  Tensor g = xw_t + matmul(h, w[1].t());
  if (w[3].defined()) g = g + w[3];
  Tensor i = functional::sigmoid(g.narrow(1, 0, hs)), f = functional::sigmoid(g.narrow(1, hs, hs));
  Tensor gg = tanh(g.narrow(1, 2 * hs, hs)), o = functional::sigmoid(g.narrow(1, 3 * hs, hs));
  c = f * c + i * gg;
  h = o * tanh(c);
}

std::tuple<Tensor, std::tuple<Tensor, Tensor>> LSTM::forward(const Tensor& input, const Tensor& h0,
                                                             const Tensor& c0) {
  auto [out, hn, cn] = run(input, h0, c0, true);
  return {out, {hn, cn}};
}

void GRU::cell(const Tensor& xw_t, const std::vector<Tensor>& w, Tensor& h, Tensor&) const {
  const int64_t hs = options.hidden_size();
  Tensor hw = matmul(h, w[1].t());
  if (w[3].defined()) hw = hw + w[3];
  Tensor r = functional::sigmoid(xw_t.narrow(1, 0, hs) + hw.narrow(1, 0, hs));
  Tensor z = functional::sigmoid(xw_t.narrow(1, hs, hs) + hw.narrow(1, hs, hs));
  Tensor nn = tanh(xw_t.narrow(1, 2 * hs, hs) + r * hw.narrow(1, 2 * hs, hs));
  h = (1.0 - z) * nn + z * h;
}

std::tuple<Tensor, Tensor> GRU::forward(const Tensor& input, const Tensor& h0) {
  auto [out, hn, cn] = run(input, h0, Tensor(), false);
  (void)cn;
  return {out, hn};
}

}  // namespace ember::nn
