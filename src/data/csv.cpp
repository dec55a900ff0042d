// read_csv: numeric CSV files into a TensorDataset.
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "data/file_util.h"
#include "ember/data/io.h"

namespace ember::data {
namespace {

std::string trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && (s[a] == ' ' || s[a] == '\t')) ++a;
  while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t')) --b;
  std::string r = s.substr(a, b - a);
  if (r.size() >= 2 && r.front() == '"' && r.back() == '"') r = r.substr(1, r.size() - 2);
  return r;
}

std::vector<std::string> split(const std::string& line, char delim) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    if (c == delim && !quoted) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(trim(cur));
  return out;
}

bool parse_number(const std::string& s, double* v) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  *v = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && errno != ERANGE;
}

}  // namespace

TensorDataset read_csv(const std::string& path, const CsvOptions& o) {
  const char* op = "read_csv";
  const std::vector<unsigned char> bytes = detail::read_file(path, op);
  const std::string text(bytes.begin(), bytes.end());
  std::vector<std::vector<std::string>> rows;
  std::vector<int64_t> line_no;
  size_t pos = 0;
  int64_t ln = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++ln;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    // Blank means whitespace only: a row holding "" is one empty field (rejected below), not a
    // blank line to skip.
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    rows.push_back(split(line, o.delimiter));
    line_no.push_back(ln);
  }
  if (rows.empty()) EMBER_FAIL(op, path, ": empty file (no rows)");
  bool header = o.header == CsvHeader::Yes;
  if (o.header == CsvHeader::Auto) {
    double v;
    for (const auto& f : rows[0])
      if (!parse_number(f, &v)) header = true;
  }
  const int64_t cols = int64_t(rows[0].size());
  if (cols < 2)
    EMBER_FAIL(op, path, ":", line_no[0],
               ": need at least 2 columns (features and a label), found ", cols);
  int64_t label = o.label_column;
  if (!o.label_name.empty()) {
    if (!header) EMBER_FAIL(op, path, ": label column '", o.label_name, "' named but no header");
    label = -1;
    for (int64_t c = 0; c < cols; ++c)
      if (rows[0][size_t(c)] == o.label_name) label = c;
    if (label < 0) EMBER_FAIL(op, path, ": no column named '", o.label_name, "' in the header");
  } else {
    if (label < -cols || label >= cols)
      EMBER_FAIL(op, path, ": label column ", label, " is out of range for ", cols, " columns");
    if (label < 0) label += cols;
  }
  const size_t first = header ? 1 : 0;
  const int64_t n = int64_t(rows.size() - first);
  std::vector<float> data;
  std::vector<int64_t> labels;
  data.reserve(size_t(n * (cols - 1)));
  labels.reserve(size_t(n));
  for (size_t r = first; r < rows.size(); ++r) {
    const auto& row = rows[r];
    if (int64_t(row.size()) != cols)
      EMBER_FAIL(op, path, ":", line_no[r], ": expected ", cols, " columns, found ", row.size());
    for (int64_t c = 0; c < cols; ++c) {
      double v;
      if (!parse_number(row[size_t(c)], &v))
        EMBER_FAIL(op, path, ":", line_no[r], ": column ", c, " is not a number: '", row[size_t(c)],
                   "'");
      if (c != label) {
        data.push_back(float(v));
        continue;
      }
      if (v != std::floor(v) || std::fabs(v) > 9e15)
        EMBER_FAIL(op, path, ":", line_no[r], ": label ", row[size_t(c)], " is not an integer");
      if (o.num_classes > 0 && (v < 0 || v >= double(o.num_classes)))
        EMBER_FAIL(op, path, ":", line_no[r], ": label ", int64_t(v), " out of range [0, ",
                   o.num_classes, ")");
      labels.push_back(int64_t(v));
    }
  }
  return TensorDataset(from_vector<float>(data, {n, cols - 1}, Device::cpu()),
                       from_vector<int64_t>(labels, {n}, Device::cpu()));
}

}  // namespace ember::data
