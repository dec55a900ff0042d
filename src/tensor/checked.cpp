// Checks of numbers read from files (ember/checked.h).
#include "ember/checked.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "ember/error.h"

namespace ember {

namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr double kDMax = std::numeric_limits<double>::max();

// The shortest decimal that reads back as v; "nan", "inf", "-inf" as themselves.
std::string show(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string int_range(int64_t lo, int64_t hi) {
  if (lo == hi) return std::to_string(lo);
  const std::string upto = hi == kMax ? "" : " <= " + std::to_string(hi);
  if (lo == 0) return "a non-negative integer" + upto;
  if (lo == 1) return "a positive integer" + upto;
  if (lo == kMin) return "an integer" + upto;
  if (hi == kMax) return "an integer >= " + std::to_string(lo);
  return "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

std::string double_range(double lo, double hi) {
  if (lo == -kDMax && hi == kDMax) return "a finite number";
  if (hi == kDMax) return "a finite number >= " + show(lo);
  if (lo == -kDMax) return "a finite number <= " + show(hi);
  return "a finite number in [" + show(lo) + ", " + show(hi) + "]";
}

[[noreturn]] void bad(const FileField& f, const std::string& value, const std::string& expected) {
  EMBER_FAIL(f.op, f.where, f.where.empty() ? "" : ": ", "field '", f.name, "' = ", value,
             " is not ", expected);
}

// Text as it appears in a message: quoted, long text shortened.
std::string quoted(const std::string& s) {
  return "\"" + (s.size() > 40 ? s.substr(0, 37) + "..." : s) + "\"";
}

bool all_digits(const std::string& s, size_t from) {
  if (s.size() <= from) return false;
  for (size_t i = from; i < s.size(); ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

}  // namespace

double checked_double(const FileField& f, double v, double lo, double hi) {
  if (!std::isfinite(v) || v < lo || v > hi) bad(f, show(v), double_range(lo, hi));
  return v;
}

int64_t checked_int64(const FileField& f, double v, int64_t lo, int64_t hi) {
  // [-2^63, 2^63) holds every double that converts to an int64; the comparisons are exact.
  constexpr double kTwo63 = 9223372036854775808.0;
  if (!std::isfinite(v) || v != std::floor(v) || v < -kTwo63 || v >= kTwo63)
    bad(f, show(v), int_range(lo, hi));
  const auto i = static_cast<int64_t>(v);
  if (i < lo || i > hi) bad(f, show(v), int_range(lo, hi));
  return i;
}

int64_t checked_int64(const FileField& f, const std::string& text, int64_t lo, int64_t hi) {
  const bool neg = !text.empty() && text[0] == '-';
  if (!all_digits(text, neg ? 1 : 0)) bad(f, quoted(text), int_range(lo, hi));
  errno = 0;
  const long long v = std::strtoll(text.c_str(), nullptr, 10);
  if (errno == ERANGE || v < lo || v > hi) bad(f, quoted(text), int_range(lo, hi));
  return v;
}

uint64_t checked_uint64(const FileField& f, const std::string& text) {
  if (!all_digits(text, 0)) bad(f, quoted(text), "a non-negative integer");
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE) bad(f, quoted(text), "a non-negative integer < 2^64");
  return v;
}

namespace {
void check_one(const FileField& f, const Tensor& t) {
  if (!t.defined())
    EMBER_FAIL(f.op, f.where, f.where.empty() ? "" : ": ", "field '", f.name,
               "' is an undefined tensor");
  if (t.numel() != 1)
    EMBER_FAIL(f.op, f.where, f.where.empty() ? "" : ": ", "field '", f.name,
               "' must hold one value, got ", t.numel(), " (shape ", shape_str(t.shape()), ")");
}
}  // namespace

double checked_double(const FileField& f, const Tensor& t, double lo, double hi) {
  check_one(f, t);
  return checked_double(f, t.item<double>(), lo, hi);
}

int64_t checked_int64(const FileField& f, const Tensor& t, int64_t lo, int64_t hi) {
  check_one(f, t);
  if (is_floating(t.dtype())) return checked_int64(f, t.item<double>(), lo, hi);
  if (t.dtype() == DType::u64) {
    const uint64_t u = t.item<uint64_t>();
    if (u > uint64_t(kMax) || int64_t(u) > hi || int64_t(u) < lo)
      bad(f, std::to_string(u), int_range(lo, hi));
    return int64_t(u);
  }
  const int64_t i = t.item<int64_t>();  // bool and every other integer dtype fit exactly
  if (i < lo || i > hi) bad(f, std::to_string(i), int_range(lo, hi));
  return i;
}

}  // namespace ember
