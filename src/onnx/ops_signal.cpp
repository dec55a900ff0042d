// ONNX ops: window functions, DFT, STFT, MelWeightMatrix, LRN, ReverseSequence, Unique.
// Constant tables (windows, DFT matrices, mel filters) are built on the host in double and cast
// once; the data-dependent work runs as Ember ops on the input's device.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>

#include "onnx/ops.h"
#include "onnx/proto.h"

namespace ember::onnx::detail {
namespace {

constexpr double kPi = std::numbers::pi;

// Host values -> a tensor of `dtype` on `device` (cast on ref, where every dtype exists).
Tensor from_host(const std::vector<double>& v, Shape shape, DType dtype, Device device) {
  return from_vector<double>(v, std::move(shape), Device::ref()).to(dtype).to(device);
}

std::string floating_input(const Node& n, size_t k) {
  const int32_t t = n.input_type(k);
  using TP = ::onnx::TensorProto;
  if (t == 0 || t == TP::FLOAT || t == TP::DOUBLE || t == TP::FLOAT16 || t == TP::BFLOAT16)
    return "";
  return "input " + std::to_string(k) + " of type " + onnx_type_name(t) + " not mapped";
}

// "" when attribute `name` (default `def`) names a data type Ember has.
std::string datatype_attr(const Node& n, const char* name, int64_t def, DType& out) {
  if (!dtype_from_onnx(int32_t(n.i(name, def)), out))
    return std::string(name) + " " + onnx_type_name(int32_t(n.i(name, def))) + " not mapped";
  return "";
}

// ---- HannWindow, HammingWindow, BlackmanWindow (opset 17): w[n] = f(2 pi n / N), N = size
// when periodic (default), size - 1 when symmetric ----
using WindowFn = double (*)(double);

OpImpl window(WindowFn f) {
  return {[](const Node& n) {
            DType d;
            std::string why = n.only_attrs({"output_datatype", "periodic"});
            return why.empty() ? datatype_attr(n, "output_datatype", 1, d) : why;
          },
          [f](const Node& n, const Tensors& in) {
            DType d = DType::f32;
            dtype_from_onnx(int32_t(n.i("output_datatype", 1)), d);
            const int64_t size = to_ints(in[0]).at(0);
            EMBER_CHECK(size >= 0, "onnx.window", "size ", size, " is negative");
            const double den = double(n.i("periodic", 1) ? size : size - 1);
            std::vector<double> w(size_t(size), 1.0);  // size 1 symmetric: [1], as torch
            if (den > 0)
              for (int64_t k = 0; k < size; ++k) w[size_t(k)] = f(2 * kPi * double(k) / den);
            return Tensors{from_host(w, {size}, d, in[0].device())};
          }};
}

// ---- DFT: x [..., n, ..., c] (c = 1 real, 2 complex), axis not the last ----
// One matmul against a [m * c, bins * 2] matrix W built in double: row (j, part) of the input
// (sample j, real or imaginary) times column (k, part) of the output. With theta = 2 pi j k / L,
// e^{s i theta} (s = -1 forward, +1 inverse) maps a + ib to
//   (a cos - s b sin) + i (b cos + s a sin), scaled by 1/L when inverse (ONNX DFT's definition).
// Samples past `length` are dropped, missing ones are zeros (rows left out).
Tensor dft(const Tensor& x, int64_t axis, int64_t length, bool onesided, bool inverse) {
  const int64_t r = x.dim(), c = x.size(r - 1);
  EMBER_CHECK(r >= 2 && (c == 1 || c == 2), "onnx.DFT", "the last dim of ", shape_str(x.shape()),
              " must be 1 (real) or 2 (complex)");
  EMBER_CHECK(axis >= 0 && axis < r - 1, "onnx.DFT", "axis ", axis, " out of range for ",
              shape_str(x.shape()), " (the last dim holds the real and imaginary parts)");
  EMBER_CHECK(length >= 1, "onnx.DFT", "dft_length ", length, " must be positive");
  const int64_t m = std::min(x.size(axis), length);
  const int64_t bins = onesided ? length / 2 + 1 : length;
  const double s = inverse ? 1.0 : -1.0, scale = inverse ? 1.0 / double(length) : 1.0;
  std::vector<double> w(size_t(m * c * bins * 2));
  for (int64_t j = 0; j < m; ++j)
    for (int64_t k = 0; k < bins; ++k) {
      // j * k mod L keeps the angle in [0, 2 pi): exact zeros and signs for the symmetric points.
      const double t = 2 * kPi * double((j * k) % length) / double(length);
      const double co = std::cos(t) * scale, si = std::sin(t) * scale;
      auto at = [&](int64_t part_in, int64_t part_out) -> double& {
        return w[size_t(((j * c + part_in) * bins + k) * 2 + part_out)];
      };
      at(0, 0) = co;
      at(0, 1) = s * si;
      if (c == 2) {
        at(1, 0) = -s * si;
        at(1, 1) = co;
      }
    }
  const DType out = x.dtype(), calc = out == DType::f64 ? DType::f64 : DType::f32;
  // The transformed dim next to the last: swapping is its own inverse, so swap back at the end.
  Tensor xm = x.transpose(axis, r - 2).slice(r - 2, 0, m).to(calc).contiguous();
  Shape flat(xm.shape().begin(), xm.shape().end() - 2);
  flat.push_back(m * c);
  Tensor y = matmul(xm.reshape(flat), from_host(w, {m * c, bins * 2}, calc, x.device()));
  Shape shape(xm.shape().begin(), xm.shape().end() - 2);
  shape.push_back(bins);
  shape.push_back(2);
  y = y.reshape(shape).transpose(axis, r - 2).contiguous();
  return y.dtype() == out ? y : y.to(out);
}

OpImpl dft_op() {
  return {[](const Node& n) {
            std::string why = n.only_attrs({"axis", "inverse", "onesided"});
            if (why.empty()) why = floating_input(n, 0);
            if (why.empty() && n.i("inverse", 0) && n.i("onesided", 0))
              why = "inverse with onesided (a half spectrum to a real signal) not mapped";
            return why;
          },
          [](const Node& n, const Tensors& in) {
            const Tensor& x = in[0];
            // Opset 17 (ONNX 1.12's): the axis is an attribute, default 1.
            const int64_t axis = wrap(n.i("axis", 1), x.dim());
            EMBER_CHECK(axis >= 0 && axis < x.dim() - 1, "onnx.DFT", "axis ", axis,
                        " out of range for ", shape_str(x.shape()),
                        " (the last dim holds the real and imaginary parts)");
            const int64_t length = n.has_input(1) ? to_ints(in[1]).at(0) : x.size(axis);
            return Tensors{dft(x, axis, length, n.i("onesided", 0) != 0, n.i("inverse", 0) != 0)};
          }};
}

// ---- STFT (opset 17): signal [batch, time, c], frame_step, window [L]?, frame_length? ->
// [batch, frames, bins, 2]; frames = 1 + (time - L) / step, each frame times the window ----
OpImpl stft_op() {
  return {[](const Node& n) {
            std::string why = n.only_attrs({"onesided"});
            return why.empty() ? floating_input(n, 0) : why;
          },
          [](const Node& n, const Tensors& in) {
            const Tensor& x = in[0];
            EMBER_CHECK(x.dim() == 3, "onnx.STFT", "signal ", shape_str(x.shape()),
                        " must be [batch, length, 1 or 2]");
            const int64_t step = to_ints(in[1]).at(0);
            const bool has_window = n.has_input(2);
            int64_t len = n.has_input(3) ? to_ints(in[3]).at(0) : -1;
            if (has_window) {
              EMBER_CHECK(in[2].dim() == 1 && (len < 0 || len == in[2].size(0)), "onnx.STFT",
                          "window ", shape_str(in[2].shape()), " must be 1-d of frame_length ",
                          len);
              len = in[2].size(0);
            }
            EMBER_CHECK(len >= 1 && step >= 1 && len <= x.size(1), "onnx.STFT", "frame_length ",
                        len, " and frame_step ", step, " do not fit signal ", shape_str(x.shape()));
            const int64_t frames = 1 + (x.size(1) - len) / step;
            std::vector<int64_t> idx(size_t(frames * len));
            for (int64_t f = 0; f < frames; ++f)
              for (int64_t j = 0; j < len; ++j) idx[size_t(f * len + j)] = f * step + j;
            Tensor fr = index_select(x, 1, from_vector<int64_t>(idx, {frames * len}, x.device()));
            fr = fr.reshape({x.size(0), frames, len, x.size(2)});
            if (has_window) fr = mul(fr, in[2].to(x.dtype()).reshape({len, 1}));
            return Tensors{dft(fr, 2, len, n.i("onesided", 1) != 0, false)};
          }};
}

// ---- MelWeightMatrix (opset 17): [dft_length / 2 + 1, num_mel_bins] triangles with peak 1,
// centred on num_mel_bins + 2 points evenly spaced in mel(f) = 2595 log10(1 + f / 700) over
// [lower, upper] hertz, each point floored to a DFT bin (the ONNX reference's construction) ----
OpImpl mel_op() {
  return {
      [](const Node& n) {
        DType d;
        std::string why = n.only_attrs({"output_datatype"});
        return why.empty() ? datatype_attr(n, "output_datatype", 1, d) : why;
      },
      [](const Node& n, const Tensors& in) {
        DType d = DType::f32;
        dtype_from_onnx(int32_t(n.i("output_datatype", 1)), d);
        const int64_t mels = to_ints(in[0]).at(0), dft_len = to_ints(in[1]).at(0);
        const int64_t rate = to_ints(in[2]).at(0);
        const double lo = to_doubles(in[3]).at(0), hi = to_doubles(in[4]).at(0);
        EMBER_CHECK(mels >= 0 && dft_len >= 1 && rate >= 1, "onnx.MelWeightMatrix", "num_mel_bins ",
                    mels, ", dft_length ", dft_len, ", sample_rate ", rate, " out of range");
        const int64_t spec = dft_len / 2 + 1;
        auto mel = [](double f) { return 2595.0 * std::log10(1.0 + f / 700.0); };
        const double lo_mel = mel(lo), step = (mel(hi) - lo_mel) / double(mels + 2);
        std::vector<int64_t> bin(size_t(mels + 2));
        for (int64_t p = 0; p < mels + 2; ++p) {
          const double hz = 700.0 * (std::pow(10.0, (double(p) * step + lo_mel) / 2595.0) - 1);
          bin[size_t(p)] = int64_t(std::floor(double(dft_len + 1) * hz / double(rate)));
        }
        std::vector<double> w(size_t(spec * mels), 0.0);
        auto set = [&](int64_t j, int64_t i, double v) {
          if (j >= 0 && j < spec) w[size_t(j * mels + i)] = v;
        };
        for (int64_t i = 0; i < mels; ++i) {
          const int64_t left = bin[size_t(i)], mid = bin[size_t(i + 1)], right = bin[size_t(i + 2)];
          if (mid == left) set(mid, i, 1.0);
          for (int64_t j = left; mid != left && j <= mid; ++j)
            set(j, i, double(j - left) / double(mid - left));
          for (int64_t j = mid; j < right; ++j) set(j, i, double(right - j) / double(right - mid));
        }
        return Tensors{from_host(w, {spec, mels}, d, in[0].device())};
      }};
}

// ---- LRN: y = x / (bias + alpha / size * square_sum)^beta, square_sum over channels
// [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)] clipped to the tensor (ONNX LRN) ----
OpImpl lrn_op() {
  return {attrs({"alpha", "beta", "bias", "size"}), [](const Node& n, const Tensors& in) {
            const Tensor& x = in[0];
            EMBER_CHECK(x.dim() >= 2, "onnx.LRN", "input ", shape_str(x.shape()),
                        " needs a channel dim");
            const int64_t size = n.i("size", 1), ch = x.size(1);
            EMBER_CHECK(size >= 1, "onnx.LRN", "size ", size, " must be positive");
            const int64_t before = (size - 1) / 2, after = size - 1 - before;
            Tensor sq = mul(x, x);
            auto zero_channels = [&](int64_t k) {
              Shape s = x.shape();
              s[1] = k;
              return zeros(s, TensorOptions(x.dtype(), x.device()));
            };
            Tensor padded = cat({zero_channels(before), sq, zero_channels(after)}, 1);
            Tensor sum = padded.slice(1, 0, ch);
            for (int64_t k = 1; k < size; ++k) sum = add(sum, padded.slice(1, k, k + ch));
            const double alpha = n.f("alpha", 1e-4), beta = n.f("beta", 0.75);
            Tensor den = add(mul(sum, Scalar(alpha / double(size))), Scalar(n.f("bias", 1.0)));
            return Tensors{div(x, pow(den, Scalar(beta)))};
          }};
}

// ---- ReverseSequence: along time_axis, the first sequence_lens[b] entries of batch b reversed
// (a gather with host-built indices) ----
OpImpl reverse_sequence_op() {
  return {attrs({"batch_axis", "time_axis"}), [](const Node& n, const Tensors& in) {
            const Tensor& x = in[0];
            const int64_t b_ax = wrap(n.i("batch_axis", 1), x.dim());
            const int64_t t_ax = wrap(n.i("time_axis", 0), x.dim());
            const bool axes_ok = (b_ax == 0 && t_ax == 1) || (b_ax == 1 && t_ax == 0);
            EMBER_CHECK(x.dim() >= 2 && axes_ok, "onnx.ReverseSequence", "batch_axis ", b_ax,
                        " and time_axis ", t_ax, " must be 0 and 1 in either order");
            const std::vector<int64_t> lens = to_ints(in[1]);
            const int64_t batch = x.size(b_ax), time = x.size(t_ax);
            EMBER_CHECK(int64_t(lens.size()) == batch, "onnx.ReverseSequence", "sequence_lens has ",
                        lens.size(), " entries for batch ", batch);
            std::vector<int64_t> idx(size_t(batch * time));
            Shape is(size_t(x.dim()), 1);
            is[size_t(b_ax)] = batch;
            is[size_t(t_ax)] = time;
            for (int64_t b = 0; b < batch; ++b) {
              const int64_t len = std::clamp<int64_t>(lens[size_t(b)], 0, time);
              for (int64_t t = 0; t < time; ++t) {
                const size_t at = size_t(b_ax == 0 ? b * time + t : t * batch + b);
                idx[at] = t < len ? len - 1 - t : t;
              }
            }
            Tensor index = from_vector<int64_t>(idx, is, x.device()).expand(x.shape()).contiguous();
            return Tensors{gather(x, t_ax, index)};
          }};
}

// ---- Unique: the distinct slices along axis (or elements of the flattened tensor), sorted
// lexicographically or in order of first occurrence; outputs Y, the first index of each,
// each input slice's index into Y, and the counts (as numpy.unique). On the host. ----
template <typename V>
int compare_rows(const std::vector<V>& v, int64_t width, int64_t a, int64_t b) {
  for (int64_t k = 0; k < width; ++k) {
    const V x = v[size_t(a * width + k)], y = v[size_t(b * width + k)];
    if constexpr (std::is_floating_point_v<V>) {
      // A total order: NaN after every number and equal to NaN (so sorting is well defined).
      const bool nx = std::isnan(x), ny = std::isnan(y);
      if (nx || ny) {
        if (nx != ny) return nx ? 1 : -1;
        continue;
      }
    }
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

struct UniqueResult {
  std::vector<int64_t> first, inverse, counts;
};

template <typename V>
UniqueResult unique_rows(const std::vector<V>& v, int64_t rows, int64_t width, bool sorted) {
  std::vector<int64_t> order(static_cast<size_t>(rows));
  std::iota(order.begin(), order.end(), int64_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return compare_rows(v, width, a, b) < 0; });
  // Groups of equal rows in sorted order; stable sort puts each group's first occurrence first.
  std::vector<int64_t> group(static_cast<size_t>(rows)), first, counts;
  for (size_t k = 0; k < order.size(); ++k) {
    if (k == 0 || compare_rows(v, width, order[k - 1], order[k]) != 0) {
      first.push_back(order[k]);
      counts.push_back(0);
    }
    group[size_t(order[k])] = int64_t(first.size()) - 1;
    ++counts.back();
  }
  std::vector<int64_t> rank(first.size());
  std::iota(rank.begin(), rank.end(), int64_t(0));
  if (!sorted)  // by first occurrence
    std::sort(rank.begin(), rank.end(),
              [&](int64_t a, int64_t b) { return first[size_t(a)] < first[size_t(b)]; });
  std::vector<int64_t> pos(rank.size());
  UniqueResult r;
  for (size_t k = 0; k < rank.size(); ++k) {
    pos[size_t(rank[k])] = int64_t(k);
    r.first.push_back(first[size_t(rank[k])]);
    r.counts.push_back(counts[size_t(rank[k])]);
  }
  for (int64_t g : group) r.inverse.push_back(pos[size_t(g)]);
  return r;
}

OpImpl unique_op() {
  return {attrs({"axis", "sorted"}), [](const Node& n, const Tensors& in) {
            const Tensor& x = in[0];
            const bool has_axis = n.has("axis");
            const int64_t axis = has_axis ? wrap(n.i("axis", 0), x.dim()) : 0;
            EMBER_CHECK(!has_axis || (axis >= 0 && axis < x.dim()), "onnx.Unique", "axis ",
                        n.i("axis", 0), " out of range for ", shape_str(x.shape()));
            // Rows: the slices along axis, laid out one after another.
            Tensor src = has_axis ? x : x.reshape({x.numel()});
            std::vector<int64_t> perm{axis};
            for (int64_t d = 0; d < src.dim(); ++d)
              if (d != axis) perm.push_back(d);
            const Tensor rows_t = src.permute(perm);
            const int64_t rows = src.size(axis);
            const int64_t width = rows ? src.numel() / rows : 0;
            const bool sorted = n.i("sorted", 1) != 0;
            const UniqueResult u = is_floating(x.dtype())
                                       ? unique_rows(to_doubles(rows_t), rows, width, sorted)
                                       : unique_rows(to_ints(rows_t), rows, width, sorted);
            auto ints = [&](const std::vector<int64_t>& v) {
              return from_vector<int64_t>(v, {int64_t(v.size())}, x.device());
            };
            Tensor first = ints(u.first);
            return Tensors{index_select(src, axis, first), first, ints(u.inverse), ints(u.counts)};
          }};
}

}  // namespace

void register_signal_ops(std::map<std::string, OpImpl>& r) {
  r["HannWindow"] = window([](double t) { return 0.5 - 0.5 * std::cos(t); });  // sin^2(t / 2)
  // a0 = 25 / 46 (ONNX), not torch's 0.54.
  r["HammingWindow"] =
      window([](double t) { return 25.0 / 46.0 - (1.0 - 25.0 / 46.0) * std::cos(t); });
  r["BlackmanWindow"] =
      window([](double t) { return 0.42 - 0.5 * std::cos(t) + 0.08 * std::cos(2 * t); });
  r["DFT"] = dft_op();
  r["STFT"] = stft_op();
  r["MelWeightMatrix"] = mel_op();
  r["LRN"] = lrn_op();
  r["ReverseSequence"] = reverse_sequence_op();
  r["Unique"] = unique_op();
}

}  // namespace ember::onnx::detail
