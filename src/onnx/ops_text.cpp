// ONNX ops on token ids: TfIdfVectorizer (integer pools; string pools need a type Ember lacks).
#include <algorithm>
#include <map>

#include "onnx/ops.h"

namespace ember::onnx::detail {
namespace {

// TfIdfVectorizer-9: counts the pool's n-grams (min_gram_length..max_gram_length tokens, taken
// every skip + 1 positions for each skip in 0..max_skip_count; a 1-gram once) in each row of X
// ([C] or [N, C] ids); Y[.., ngram_indexes[i]] is the count of the pool's i-th n-gram (TF), 1
// when found (IDF) or the count (TFIDF), times weights[i] when given. Host side: the ids are few.
Tensors tfidf(const Node& n, const Tensors& in) {
  const Tensor& x = in[0];
  EMBER_CHECK(x.dim() == 1 || x.dim() == 2, "TfIdfVectorizer", "X must be [C] or [N, C], got ",
              shape_str(x.shape()));
  const int64_t min_n = n.i("min_gram_length", 1), max_n = n.i("max_gram_length", 1);
  const int64_t max_skip = n.i("max_skip_count", 0);
  const std::string mode = n.s("mode", "TF");
  const std::vector<int64_t> counts = n.ints("ngram_counts"), indexes = n.ints("ngram_indexes");
  const std::vector<int64_t> pool = n.ints("pool_int64s");
  const std::vector<double> weights = n.floats("weights");
  EMBER_CHECK(min_n >= 1 && max_n >= min_n && max_skip >= 0, "TfIdfVectorizer", "gram lengths ",
              min_n, "..", max_n, " and max_skip_count ", max_skip);
  // The pool's n-grams by length: n-gram -> its position i in the pool's order.
  std::map<std::vector<int64_t>, size_t> grams;
  size_t id = 0;
  for (size_t k = 0; k < counts.size(); ++k) {
    const size_t len = k + 1;
    const size_t begin = size_t(counts[k]);
    const size_t end = k + 1 < counts.size() ? size_t(counts[k + 1]) : pool.size();
    EMBER_CHECK(begin <= end && end <= pool.size() && (end - begin) % len == 0, "TfIdfVectorizer",
                "ngram_counts ", counts[k], " does not split pool_int64s into ", len, "-grams");
    for (size_t at = begin; at < end; at += len, ++id)
      grams.emplace(
          std::vector<int64_t>(pool.begin() + int64_t(at), pool.begin() + int64_t(at + len)), id);
  }
  EMBER_CHECK(indexes.size() == id && (weights.empty() || weights.size() == id), "TfIdfVectorizer",
              "the pool holds ", id, " n-grams but ngram_indexes has ", indexes.size(),
              weights.empty() ? "" : " and weights " + std::to_string(weights.size()));
  int64_t width = 0;
  for (int64_t v : indexes) {
    EMBER_CHECK(v >= 0, "TfIdfVectorizer", "negative ngram_indexes entry ", v);
    width = std::max(width, v + 1);
  }
  const int64_t rows = x.dim() == 2 ? x.size(0) : 1, c = x.size(x.dim() - 1);
  const std::vector<int64_t> ids = to_ints(x);
  std::vector<float> y(size_t(rows * width), 0.f);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> count(id, 0.0);
    for (int64_t len = min_n; len <= max_n; ++len)
      for (int64_t skip = 0; skip <= (len == 1 ? 0 : max_skip); ++skip)
        for (int64_t i = 0; i + (len - 1) * (skip + 1) < c; ++i) {
          std::vector<int64_t> g;
          for (int64_t t = 0; t < len; ++t) g.push_back(ids[size_t(r * c + i + t * (skip + 1))]);
          auto it = grams.find(g);
          if (it != grams.end()) count[it->second] += 1;
        }
    for (size_t k = 0; k < id; ++k) {
      double v = mode == "IDF" ? (count[k] > 0 ? 1.0 : 0.0) : count[k];
      if (mode != "TF" && !weights.empty()) v *= weights[k];
      y[size_t(r * width + indexes[k])] = float(v);
    }
  }
  Shape shape = x.dim() == 2 ? Shape{rows, width} : Shape{width};
  return {from_vector(y, shape, Device::ref()).to(x.device())};
}

}  // namespace

void register_text_ops(std::map<std::string, OpImpl>& r) {
  r["TfIdfVectorizer"] = {
      [](const Node& n) -> std::string {
        if (n.has("pool_strings")) return "pool_strings (string tensors)";
        const std::string mode = n.s("mode", "TF");
        if (mode != "TF" && mode != "IDF" && mode != "TFIDF") return "mode " + mode;
        return n.only_attrs({"max_gram_length", "max_skip_count", "min_gram_length", "mode",
                             "ngram_counts", "ngram_indexes", "pool_int64s", "weights"});
      },
      tfidf};
}

}  // namespace ember::onnx::detail
