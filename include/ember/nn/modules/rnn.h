// Recurrent layers: LSTM and GRU (as torch.nn.LSTM / torch.nn.GRU, torch 1.13), written with
// tensor ops (matmul, sigmoid, tanh, narrow, stack, cat) so autodiff differentiates through them
// and every backend runs them. Parameters are f32 on the default device at construction; use
// Module::to() to move or cast them.
#pragma once
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "ember/nn/module.h"
#include "ember/nn/modules/options.h"

namespace ember::nn {

/// Options shared by LSTM and GRU (torch's argument names and defaults).
struct RNNOptionsBase {
  RNNOptionsBase(int64_t input_size, int64_t hidden_size)
      : input_size_(input_size), hidden_size_(hidden_size) {}
  EMBER_ARG(int64_t, input_size);
  EMBER_ARG(int64_t, hidden_size);
  EMBER_ARG(int64_t, num_layers) = 1;
  EMBER_ARG(bool, bias) = true;
  /// input and output are [N, L, *] instead of [L, N, *] (h_0 / h_n are never transposed).
  EMBER_ARG(bool, batch_first) = false;
  /// Dropout on the outputs of every layer but the last, in training mode only.
  EMBER_ARG(double, dropout) = 0.0;
  EMBER_ARG(bool, bidirectional) = false;
};
using LSTMOptions = RNNOptionsBase;
using GRUOptions = RNNOptionsBase;

/// The machinery LSTM and GRU share: parameters named and shaped as torch
/// (weight_ih_l{k}[_reverse] [G*H, I_k], weight_hh_l{k} [G*H, H], bias_ih_l{k} [G*H],
/// bias_hh_l{k} [G*H], registered layer by layer, forward direction first; I_0 = input_size,
/// I_k = H * num_directions), all initialized U(-1/sqrt(H), 1/sqrt(H)) as torch.
/// Shapes (D = 2 if bidirectional else 1):
///   input [L, N, input_size] ([N, L, input_size] if batch_first, [L, input_size] unbatched)
///   h_0, c_0 [D * num_layers, N, H] ([D * num_layers, H] unbatched); zeros when undefined
///   output [L, N, D * H] (the last layer's h_t of both directions concatenated), h_n and c_n
///   [D * num_layers, N, H] (the final states of every layer and direction).
/// Throws (tagged with the module name, "LSTM" / "GRU") at construction for non-positive sizes,
/// dropout outside [0, 1]; in forward for an input that is not 2-d or 3-d, a last dim other than
/// input_size, an empty sequence, a non-floating input, a dtype or device other than the
/// parameters', or initial states of the wrong shape.
class RNNBase : public Module {
 public:
  /// Redraws every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)).
  void reset_parameters();
  /// The parameters of one layer and direction: {w_ih, w_hh, b_ih, b_hh} (the biases are
  /// undefined without bias). Throws for an index out of range.
  std::vector<Tensor> layer_weights(int64_t layer, bool reverse = false) const;
  /// "3, 4, num_layers=2, batch_first=True, bidirectional=True" as torch prints it.
  std::string extra_repr() const override;

  RNNOptionsBase options;

 protected:
  RNNBase(const char* type, const RNNOptionsBase& options, int64_t gates);

  /// One time step for one layer and direction: updates h (and c for LSTM) from the projected
  /// input gates xw_t [N, G*H] (input projection plus b_ih).
  virtual void cell(const Tensor& xw_t, const std::vector<Tensor>& w, Tensor& h,
                    Tensor& c) const = 0;
  /// Validates and runs all layers. Returns output, h_n and (for LSTM) c_n.
  std::tuple<Tensor, Tensor, Tensor> run(const Tensor& input, const Tensor& h0, const Tensor& c0,
                                         bool has_cell);

 private:
  int64_t gates_;
  std::vector<std::vector<Tensor>> weights_;  // [layer * D + direction] -> {w_ih, w_hh, b_ih, b_hh}
};

/// Long short-term memory (Hochreiter & Schmidhuber 1997; as torch.nn.LSTM), gates in torch's
/// order i, f, g, o:
///   i = sigmoid(W_ii x + b_ii + W_hi h + b_hi)   f = sigmoid(W_if x + b_if + W_hf h + b_hf)
///   g = tanh(W_ig x + b_ig + W_hg h + b_hg)      o = sigmoid(W_io x + b_io + W_ho h + b_ho)
///   c' = f * c + i * g                           h' = o * tanh(c')
/// forward(input, h_0, c_0) -> (output, (h_n, c_n)); h_0 and c_0 are given together or not at all.
class LSTM : public RNNBase {
 public:
  LSTM(int64_t input_size, int64_t hidden_size, int64_t num_layers = 1)
      : LSTM(LSTMOptions(input_size, hidden_size).num_layers(num_layers)) {}
  explicit LSTM(const LSTMOptions& options) : RNNBase("LSTM", options, 4) {}
  std::tuple<Tensor, std::tuple<Tensor, Tensor>> forward(const Tensor& input,
                                                         const Tensor& h0 = Tensor(),
                                                         const Tensor& c0 = Tensor());
  std::tuple<Tensor, std::tuple<Tensor, Tensor>> operator()(const Tensor& input,
                                                            const Tensor& h0 = Tensor(),
                                                            const Tensor& c0 = Tensor()) {
    if (!has_forward_hooks()) return forward(input, h0, c0);
    return call_with_hooks<std::tuple<Tensor, std::tuple<Tensor, Tensor>>>(
        {input, h0, c0},
        [&](const std::vector<Tensor>& in) { return forward(in[0], in[1], in[2]); });
  }

 protected:
  void cell(const Tensor& xw_t, const std::vector<Tensor>& w, Tensor& h, Tensor& c) const override;
};

/// Gated recurrent unit (Cho et al. 2014; as torch.nn.GRU), gates in torch's order r, z, n:
///   r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)   z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)
///   n = tanh(W_in x + b_in + r * (W_hn h + b_hn))   h' = (1 - z) * n + z * h
/// forward(input, h_0) -> (output, h_n).
class GRU : public RNNBase {
 public:
  GRU(int64_t input_size, int64_t hidden_size, int64_t num_layers = 1)
      : GRU(GRUOptions(input_size, hidden_size).num_layers(num_layers)) {}
  explicit GRU(const GRUOptions& options) : RNNBase("GRU", options, 3) {}
  std::tuple<Tensor, Tensor> forward(const Tensor& input, const Tensor& h0 = Tensor());
  std::tuple<Tensor, Tensor> operator()(const Tensor& input, const Tensor& h0 = Tensor()) {
    if (!has_forward_hooks()) return forward(input, h0);
    return call_with_hooks<std::tuple<Tensor, Tensor>>(
        {input, h0}, [&](const std::vector<Tensor>& in) { return forward(in[0], in[1]); });
  }

 protected:
  void cell(const Tensor& xw_t, const std::vector<Tensor>& w, Tensor& h, Tensor& c) const override;
};

}  // namespace ember::nn
