// Epoch metrics: loss, accuracy, top-k accuracy, macro precision / recall / F1.
#include "ember/train/metrics.h"

#include <cmath>
#include <limits>
#include <set>

#include "ember/dist/dist.h"
#include "ember/train/learner.h"

namespace ember::train {

void MetricAccumulator::reset() { *this = MetricAccumulator(top_k_); }

void MetricAccumulator::add(double loss, int64_t batch_size, const Tensor& output,
                            const Tensor& target) {
  samples_ += batch_size;
  loss_sum_ += loss * double(batch_size);
  if (!output.defined() || !target.defined()) return;
  if (output.dim() != 2 || target.dim() != 1 || output.size(0) != target.size(0) ||
      !is_integral(target.dtype()) || output.size(1) < 1)
    return;  // not classification: loss only
  const int64_t b = output.size(0), c = output.size(1);
  if (classes_ == 0) {
    classes_ = c;
    confusion_.assign(size_t(c * c), 0);
  } else if (classes_ != c) {
    EMBER_FAIL("metrics", "the class count changed from ", classes_, " to ", c);
  }
  const std::vector<double> scores = output.detach().to(Device::cpu()).to_vector<double>();
  const std::vector<int64_t> labels = target.to(Device::cpu()).to_vector<int64_t>();
  const int64_t k = std::min(top_k_, c);
  for (int64_t i = 0; i < b; ++i) {
    const int64_t t = labels[size_t(i)];
    if (t < 0 || t >= c)
      EMBER_FAIL("metrics", "target ", t, " is out of range for ", c, " classes");
    const double* row = scores.data() + i * c;
    // NaN ranks above every number (as torch.argmax), so a diverged model scores nothing.
    auto greater = [](double a, double b) { return std::isnan(a) ? !std::isnan(b) : a > b; };
    int64_t pred = 0, above = 0;
    for (int64_t j = 0; j < c; ++j) {
      if (greater(row[j], row[pred])) pred = j;  // first maximum, as torch.argmax
      if (greater(row[j], row[t]) || (j != t && std::isnan(row[j]) && std::isnan(row[t]))) ++above;
    }
    ++confusion_[size_t(t * c + pred)];
    correct_ += pred == t;
    topk_correct_ += above < k;
    ++cls_samples_;
  }
}

void MetricAccumulator::all_reduce() {
  // The class count first: a rank that saw no classification batch has none yet.
  const Tensor classes = from_vector(std::vector<int64_t>{classes_, -classes_}, {2}, Device::cpu());
  dist::all_reduce(classes, dist::ReduceOp::max);
  const std::vector<int64_t> c = classes.to_vector<int64_t>();
  if (classes_ != 0 && (c[0] != classes_ || -c[1] != classes_))
    EMBER_FAIL("metrics", "the ranks saw different class counts (", -c[1], " to ", c[0],
               "): every rank must run the same model");
  if (classes_ == 0 && c[0] > 0) {
    classes_ = c[0];
    confusion_.assign(size_t(classes_ * classes_), 0);
  }
  // Counts below 2^53 are exact in f64.
  std::vector<double> v = {double(samples_), loss_sum_, double(correct_), double(topk_correct_),
                           double(cls_samples_)};
  for (int64_t n : confusion_) v.push_back(double(n));
  const Tensor t = from_vector(v, {int64_t(v.size())}, Device::cpu());
  dist::all_reduce(t, dist::ReduceOp::sum);
  v = t.to_vector<double>();
  samples_ = int64_t(v[0]);
  loss_sum_ = v[1];
  correct_ = int64_t(v[2]);
  topk_correct_ = int64_t(v[3]);
  cls_samples_ = int64_t(v[4]);
  for (size_t i = 0; i < confusion_.size(); ++i) confusion_[i] = int64_t(v[5 + i]);
}

std::map<std::string, double> MetricAccumulator::compute() const {
  std::map<std::string, double> m;
  if (samples_ > 0) m["loss"] = loss_sum_ / double(samples_);
  if (cls_samples_ == 0) return m;
  m["accuracy"] = double(correct_) / double(cls_samples_);
  m["top_k_accuracy"] = double(topk_correct_) / double(cls_samples_);
  // Macro averages over the labels present in targets or predictions (sklearn's default).
  double p_sum = 0, r_sum = 0, f_sum = 0;
  int64_t labels = 0;
  for (int64_t c = 0; c < classes_; ++c) {
    int64_t tp = confusion_[size_t(c * classes_ + c)], actual = 0, predicted = 0;
    for (int64_t j = 0; j < classes_; ++j) {
      actual += confusion_[size_t(c * classes_ + j)];
      predicted += confusion_[size_t(j * classes_ + c)];
    }
    if (actual == 0 && predicted == 0) continue;
    const double p = predicted ? double(tp) / double(predicted) : 0.0;
    const double r = actual ? double(tp) / double(actual) : 0.0;
    p_sum += p;
    r_sum += r;
    f_sum += (p + r) > 0 ? 2 * p * r / (p + r) : 0.0;
    ++labels;
  }
  m["precision"] = p_sum / double(labels);
  m["recall"] = r_sum / double(labels);
  m["f1"] = f_sum / double(labels);
  return m;
}

MeanMetric::MeanMetric(std::string name, Fn batch_mean)
    : name_(std::move(name)), fn_(std::move(batch_mean)) {
  if (!fn_) EMBER_FAIL("MeanMetric", "the function of metric \"", name_, "\" is empty");
}

void MeanMetric::reset() {
  sum_ = 0;
  count_ = 0;
}

void MeanMetric::update(const Tensor& output, const Tensor& target) {
  const Tensor& by = target.defined() && target.dim() > 0 ? target : output;
  const int64_t n = by.defined() && by.dim() > 0 ? by.size(0) : 1;
  sum_ += fn_(output, target) * double(n);
  count_ += n;
}

double MeanMetric::compute() const {
  return count_ > 0 ? sum_ / double(count_) : std::numeric_limits<double>::quiet_NaN();
}

std::shared_ptr<Metric> mean_metric(std::string name, MeanMetric::Fn batch_mean) {
  return std::make_shared<MeanMetric>(std::move(name), std::move(batch_mean));
}

}  // namespace ember::train
