// ONNX ops: NonMaxSuppression, MaxUnpool.
#include <algorithm>
#include <numeric>

#include "onnx/ops.h"

namespace ember::onnx::detail {
namespace {

struct Box {
  double y1, x1, y2, x2;
  double area() const { return (y2 - y1) * (x2 - x1); }
};

// Box k of `b` (4 values each) with its corners ordered. ONNX NonMaxSuppression: center_point_box
// 0 gives [y1, x1, y2, x2] of any diagonal pair, 1 gives [x_center, y_center, width, height].
Box box_at(const std::vector<double>& b, size_t k, bool center) {
  const double* v = &b[4 * k];
  if (center) return {v[1] - v[3] / 2, v[0] - v[2] / 2, v[1] + v[3] / 2, v[0] + v[2] / 2};
  return {std::min(v[0], v[2]), std::min(v[1], v[3]), std::max(v[0], v[2]), std::max(v[1], v[3])};
}

double iou(const Box& a, const Box& b) {
  const double h = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
  const double w = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  if (h <= 0 || w <= 0) return 0.0;
  const double inter = h * w, uni = a.area() + b.area() - inter;
  return uni <= 0 ? 0.0 : inter / uni;
}

// boxes [B, N, 4], scores [B, C, N] -> selected_indices [K, 3] of (batch, class, box), per batch
// and class in the order selected (descending score). Greedy on the host: the boxes are few.
Tensors non_max_suppression(const Node& n, const Tensors& in) {
  const Tensor& boxes = in[0];
  const Tensor& scores = in[1];
  const int64_t nb = scores.size(0), nc = scores.size(1), nbox = scores.size(2);
  EMBER_CHECK(
      boxes.dim() == 3 && boxes.size(0) == nb && boxes.size(1) == nbox && boxes.size(2) == 4,
      "NonMaxSuppression", "boxes ", shape_str(boxes.shape()), " do not match scores ",
      shape_str(scores.shape()));
  // Omitted optional inputs: no boxes selected, IoU threshold 0, no score threshold.
  auto given = [&](size_t k) { return k < in.size() && in[k].defined() && in[k].numel() > 0; };
  const int64_t max_out = given(2) ? to_ints(in[2]).at(0) : 0;
  const double iou_thr = given(3) ? to_doubles(in[3]).at(0) : 0.0;
  const bool has_score_thr = given(4);
  const double score_thr = has_score_thr ? to_doubles(in[4]).at(0) : 0.0;
  const bool center = n.i("center_point_box", 0) != 0;

  const std::vector<double> b = to_doubles(boxes), s = to_doubles(scores);
  std::vector<int64_t> out;
  for (int64_t bi = 0; bi < nb && max_out > 0; ++bi) {
    for (int64_t ci = 0; ci < nc; ++ci) {
      const double* sc = &s[size_t((bi * nc + ci) * nbox)];
      std::vector<int64_t> order;
      for (int64_t k = 0; k < nbox; ++k)  // the spec removes boxes scoring below the threshold
        if (!has_score_thr || sc[k] >= score_thr) order.push_back(k);
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t p, int64_t q) { return sc[p] > sc[q]; });
      std::vector<Box> kept;
      for (int64_t k : order) {
        if (int64_t(kept.size()) >= max_out) break;
        const Box cand = box_at(b, size_t(bi * nbox + k), center);
        // Suppressed when the IoU with a selected box is strictly above the threshold.
        bool keep = true;
        for (const Box& sel : kept)
          if (iou(cand, sel) > iou_thr) {
            keep = false;
            break;
          }
        if (!keep) continue;
        kept.push_back(cand);
        out.insert(out.end(), {bi, ci, k});
      }
    }
  }
  return {from_vector<int64_t>(out, {int64_t(out.size() / 3), 3}, boxes.device())};
}

// ONNX MaxUnpool: X's values scattered to the flat positions I (over the whole tensor, as
// MaxPool's indices) of zeros of the default shape (in - 1) * stride + kernel - pads; an
// output_shape input pads that with zeros at the end of each spatial dim (ONNX's reference).
Tensors max_unpool(const Node& n, const Tensors& in) {
  const Tensor& x = in[0];
  const size_t sd = size_t(x.dim() - 2);
  const auto k = n.ints("kernel_shape");
  const auto s = n.ints("strides", std::vector<int64_t>(sd, 1));
  const auto pads = n.ints("pads", std::vector<int64_t>(2 * sd, 0));
  Shape shape = {x.size(0), x.size(1)};
  for (size_t i = 0; i < sd; ++i)
    shape.push_back((x.size(int64_t(i) + 2) - 1) * s[i] + k[i] - pads[i] - pads[i + sd]);
  const int64_t numel = std::accumulate(shape.begin(), shape.end(), int64_t(1),
                                        [](int64_t a, int64_t d) { return a * d; });
  Tensor flat = zeros({numel}, {x.dtype(), x.device()});
  Tensor y = scatter(flat, 0, in[1].to(DType::i64).reshape({-1}), x.reshape({-1})).reshape(shape);
  if (n.has_input(2) && in.size() > 2 && in[2].defined()) {
    const auto want = to_ints(in[2]);
    EMBER_CHECK(want.size() == shape.size(), "MaxUnpool", "output_shape has ", want.size(),
                " dims, want ", shape.size());
    std::vector<int64_t> p;  // last dim first, (begin, end) as pad()
    for (size_t i = shape.size(); i-- > 2;) {
      EMBER_CHECK(want[i] >= shape[i], "MaxUnpool", "output_shape ", shape_str(want),
                  " smaller than the unpooled ", shape_str(shape));
      p.push_back(0);
      p.push_back(want[i] - shape[i]);
    }
    y = pad(y, p, "constant", 0.0);
  }
  return {y};
}

}  // namespace

void register_detect_ops(std::map<std::string, OpImpl>& r) {
  r["NonMaxSuppression"] = {attrs({"center_point_box"}), non_max_suppression};
  r["MaxUnpool"] = {[](const Node& n) -> std::string {
                      // Spec: with output_shape, pads are ignored; where the indices land is then
                      // not defined for nonzero pads.
                      const auto pads = n.ints("pads");
                      if (n.has_input(2) &&
                          std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; }))
                        return "pads with an output_shape input";
                      return n.only_attrs({"kernel_shape", "pads", "strides"});
                    },
                    max_unpool};
}

}  // namespace ember::onnx::detail
