// torch.nn.functional.pad: constant (a new full tensor + copy_ into the interior view) and
// reflect / replicate / circular (per padded dim, cat of the border pieces around the interior).
#include <algorithm>

#include "ember/ops/layout.h"
#include "tensor/internal.h"
#include "tensor/suggest_format.h"

namespace ember {

namespace {

Shape replace(const Tensor& x, int64_t d, int64_t n) {
  Shape s = x.shape();
  s[size_t(d)] = n;
  return s;
}

// One padded dim for the non-constant modes: [left border, interior, right border], each piece
// read from x (the original extent, so a negative pad on one side does not change the other).
Tensor pad_dim(const Tensor& x, int64_t d, int64_t l, int64_t r, const std::string& mode) {
  const int64_t n = x.size(d);
  auto fail_size = [&](const char* what) {
    EMBER_FAIL("pad", mode, " padding (", l, ", ", r, ") ", what, " of dim ", d, " of shape ",
               shape_str(x.shape()));
  };
  if (n + std::min<int64_t>(l, 0) + std::min<int64_t>(r, 0) < 0 || n + l + r < 0)
    fail_size("crops more than the size");
  if (mode == "reflect" && ((l > 0 && l >= n) || (r > 0 && r >= n)))
    fail_size("must be smaller than the size");
  if (mode == "replicate" && n == 0 && (l > 0 || r > 0)) fail_size("needs a non-empty size");
  if (mode == "circular" && (l > n || r > n)) fail_size("must be at most the size");
  std::vector<Tensor> parts;
  if (l > 0) {
    if (mode == "reflect")
      parts.push_back(x.narrow(d, 1, l).flip({d}));
    else if (mode == "replicate")
      parts.push_back(x.narrow(d, 0, 1).expand(replace(x, d, l)));
    else
      parts.push_back(x.narrow(d, n - l, l));
  }
  const int64_t lo = std::max<int64_t>(-l, 0), hi = n - std::max<int64_t>(-r, 0);
  parts.push_back(x.narrow(d, lo, std::max<int64_t>(hi - lo, 0)));
  if (r > 0) {
    if (mode == "reflect")
      parts.push_back(x.narrow(d, n - 1 - r, r).flip({d}));
    else if (mode == "replicate")
      parts.push_back(x.narrow(d, n - 1, 1).expand(replace(x, d, r)));
    else
      parts.push_back(x.narrow(d, 0, r));
  }
  return cat(parts, d);
}

}  // namespace

Tensor pad(const Tensor& x, const std::vector<int64_t>& pad, const std::string& mode,
           double value) {
  detail::check_defined(x, "pad");
  if (mode != "constant" && mode != "reflect" && mode != "replicate" && mode != "circular")
    EMBER_FAIL("pad",
               "mode must be \"constant\", \"reflect\", \"replicate\" or \"circular\", got \"",
               mode, "\"");
  if (pad.size() % 2 != 0) EMBER_FAIL("pad", "padding length must be even, got ", pad.size());
  const int64_t k = int64_t(pad.size()) / 2;
  if (k > x.dim())
    EMBER_FAIL("pad", "padding length ", pad.size(), " pads more dims than the input has (shape ",
               shape_str(x.shape()), ")");
  // pad[2i], pad[2i+1] are the left/right pads of dim (rank - 1 - i).
  auto dim_of = [&](int64_t i) { return x.dim() - 1 - i; };
  if (mode != "constant") {
    Tensor y = x;
    for (int64_t i = 0; i < k; ++i) {
      const int64_t l = pad[size_t(2 * i)], r = pad[size_t(2 * i + 1)];
      if (l != 0 || r != 0) y = pad_dim(y, dim_of(i), l, r, mode);
    }
    // torch's reflection/replication/circular pads return a contiguous tensor.
    return (y.is_alias_of(x) ? y.clone() : y).contiguous();
  }
  Shape out_shape = x.shape();
  for (int64_t i = 0; i < k; ++i) {
    const int64_t d = dim_of(i), l = pad[size_t(2 * i)], r = pad[size_t(2 * i + 1)];
    const int64_t n = x.size(d) + l + r;
    if (n < 0)
      EMBER_FAIL("pad", "input size ", x.size(d), " plus padding (", l, ", ", r,
                 ") gives a negative size for dim ", d, " of shape ", shape_str(x.shape()));
    out_shape[size_t(d)] = n;
  }
  // torch's constant_pad_nd lays the result out as the input suggests (channels-last stays so).
  Tensor out = detail::make_tensor(out_shape, x.dtype(), x.device(), detail::suggest_format(x));
  out.fill_(Scalar(value));
  // The part of x that survives negative pads, and where it lands in out.
  Tensor src = x, dst = out;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t d = dim_of(i), l = pad[size_t(2 * i)], r = pad[size_t(2 * i + 1)];
    const int64_t lo = std::max<int64_t>(-l, 0);
    const int64_t len = x.size(d) - lo - std::max<int64_t>(-r, 0);
    if (len <= 0) return out;
    src = src.narrow(d, lo, len);
    dst = dst.narrow(d, std::max<int64_t>(l, 0), len);
  }
  dst.copy_(src);
  return out;
}

}  // namespace ember
