// NumPy .npy files (include/ember/record/npy.h). The header is the Python dict literal
// numpy.lib.format writes: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }.
#include "ember/record/npy.h"

#include <cctype>
#include <cstring>
#include <vector>

#include "ember/error.h"
#include "ember/record/safetensors.h"
#include "record/file_io.h"

namespace ember::record {
namespace {

const char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

struct Header {
  std::string descr;
  bool fortran = false;
  Shape shape;
};

// A cursor over the header's dict literal; every problem names `what`.
class Parser {
 public:
  Parser(const std::string& s, const std::string& what) : s_(s), what_(what) {}

  Header parse() {
    Header h;
    bool descr = false, order = false, shape = false;
    expect('{');
    while (!peek('}')) {
      const std::string key = quoted();
      expect(':');
      if (key == "descr") {
        h.descr = quoted();
        descr = true;
      } else if (key == "fortran_order") {
        h.fortran = boolean();
        order = true;
      } else if (key == "shape") {
        h.shape = tuple();
        shape = true;
      } else {
        fail("unknown header key '" + key + "'");
      }
      if (!peek('}')) expect(',');
    }
    expect('}');
    if (!descr || !order || !shape) fail("the header lacks descr, fortran_order or shape");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    std::string shown;  // without the padding, control characters as '?'
    for (char c : s_.substr(0, s_.find_last_not_of(" \n") + 1))
      shown += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
    EMBER_FAIL("load_npy", what_, ": ", why, " (header ", shown, ")");
  }
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool peek(char c) {
    skip();
    return i_ < s_.size() && s_[i_] == c;
  }
  void expect(char c) {
    if (!peek(c)) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string quoted() {
    skip();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) fail("expected a quoted string");
    const char q = s_[i_++];
    const size_t end = s_.find(q, i_);
    if (end == std::string::npos) fail("unterminated string");
    std::string out = s_.substr(i_, end - i_);
    i_ = end + 1;
    return out;
  }
  bool boolean() {
    skip();
    for (const char* w : {"True", "False"})
      if (s_.compare(i_, std::strlen(w), w) == 0) {
        i_ += std::strlen(w);
        return w[0] == 'T';
      }
    fail("fortran_order is not True or False");
  }
  Shape tuple() {
    Shape out;
    expect('(');
    while (!peek(')')) {
      skip();
      int64_t v = 0;
      size_t digits = 0;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
        if (v > (int64_t(1) << 40)) fail("a dim is too large");
        v = v * 10 + (s_[i_++] - '0');
        ++digits;
      }
      if (digits == 0) fail("shape holds something other than non-negative integers");
      out.push_back(v);
      if (!peek(')')) expect(',');
    }
    expect(')');
    return out;
  }

  const std::string& s_;
  const std::string& what_;
  size_t i_ = 0;
};

// The Ember dtype of a numpy descr ("<f4", "|b1", ...), or false.
bool dtype_of(std::string descr, DType& out) {
  if (descr.size() == 2) descr = "=" + descr;  // no byte order: native (little-endian here)
  if (descr.size() < 3) return false;
  const char order = descr[0];
  const std::string code = descr.substr(1);
  const bool one_byte = code == "b1" || code == "i1" || code == "u1";
  if (order != '<' && order != '|' && order != '=' && !(order == '>' && one_byte)) return false;
  static const std::pair<const char*, DType> kCodes[] = {
      {"b1", DType::b8},  {"i1", DType::i8},  {"i2", DType::i16}, {"i4", DType::i32},
      {"i8", DType::i64}, {"u1", DType::u8},  {"u2", DType::u16}, {"u4", DType::u32},
      {"u8", DType::u64}, {"f2", DType::f16}, {"f4", DType::f32}, {"f8", DType::f64}};
  for (const auto& [c, d] : kCodes)
    if (code == c) return out = d, true;
  return false;
}

const char* descr_of(DType d) {
  switch (d) {
    case DType::b8:
      return "|b1";
    case DType::i8:
      return "|i1";
    case DType::i16:
      return "<i2";
    case DType::i32:
      return "<i4";
    case DType::i64:
      return "<i8";
    case DType::u8:
      return "|u1";
    case DType::u16:
      return "<u2";
    case DType::u32:
      return "<u4";
    case DType::u64:
      return "<u8";
    case DType::f16:
      return "<f2";
    case DType::f64:
      return "<f8";
    default:
      return "<f4";  // f32, and bf16 widened
  }
}

}  // namespace

Tensor deserialize_npy(const std::string& bytes, const std::string& what, Device device) {
  EMBER_CHECK(bytes.size() >= kMagicLen + 4 && bytes.compare(0, kMagicLen, kMagic) == 0, "load_npy",
              what, ": not a .npy file (no \\x93NUMPY magic string)");
  const int major = static_cast<unsigned char>(bytes[kMagicLen]);
  EMBER_CHECK(major >= 1 && major <= 3, "load_npy", what, ": .npy format version ", major,
              " (Ember reads 1.0 to 3.0)");
  auto byte = [&](size_t k) { return size_t(static_cast<unsigned char>(bytes[k])); };
  size_t at = kMagicLen + 2, len = byte(at) | byte(at + 1) << 8;
  at += 2;
  if (major >= 2) {
    EMBER_CHECK(bytes.size() >= at + 2, "load_npy", what, ": truncated header");
    len |= byte(at) << 16 | byte(at + 1) << 24;
    at += 2;
  }
  EMBER_CHECK(len <= bytes.size() - at, "load_npy", what, ": the header claims ", len,
              " bytes, the file has ", bytes.size() - at, " after its prefix");
  const std::string text = bytes.substr(at, len);
  const Header h = Parser(text, what).parse();
  DType dt = DType::f32;
  std::string descr;
  for (char c : h.descr) descr += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
  EMBER_CHECK(dtype_of(h.descr, dt), "load_npy", what, ": dtype '", descr,
              "' is not one Ember reads (little-endian bool, int, uint or float)");
  int64_t n = 1;
  for (int64_t d : h.shape) {
    EMBER_CHECK(d == 0 || n <= (int64_t(1) << 40) / d, "load_npy", what, ": shape ",
                shape_str(h.shape), " is too large");
    n *= d;
  }
  const size_t data = at + len;
  EMBER_CHECK(bytes.size() - data == size_t(n * dtype_size(dt)), "load_npy", what, ": shape ",
              shape_str(h.shape), " of ", h.descr, " needs ", n * dtype_size(dt),
              " bytes of data, the file holds ", bytes.size() - data);
  if (!h.fortran) return from_blob(bytes.data() + data, h.shape, dt, device);
  // Column-major: the dims reversed, then transposed back.
  const Shape reversed(h.shape.rbegin(), h.shape.rend());
  Tensor t = from_blob(bytes.data() + data, reversed, dt, Device::ref());
  std::vector<int64_t> perm;
  for (int64_t d = t.dim() - 1; d >= 0; --d) perm.push_back(d);
  return t.permute(perm).contiguous().to(device);
}

Tensor load_npy(const std::string& path, Device device) {
  return deserialize_npy(detail::read_whole_file(path, "load_npy"), path, device);
}

std::string serialize_npy(const Tensor& t) {
  EMBER_CHECK(t.defined(), "save_npy", "undefined tensor");
  Tensor host = t.to(Device::ref());
  if (host.dtype() == DType::bf16) host = host.to(DType::f32);
  host = host.contiguous();
  std::string dict =
      std::string("{'descr': '") + descr_of(host.dtype()) + "', 'fortran_order': False, 'shape': (";
  for (int64_t d = 0; d < host.dim(); ++d)
    dict += std::to_string(host.size(d)) + (host.dim() == 1      ? ",)"
                                            : d + 1 < host.dim() ? ", "
                                                                 : ")");
  if (host.dim() == 0) dict += ")";
  dict += ", }";
  // Prefix + header padded with spaces to a multiple of 64 bytes, ending in '\n' (numpy's).
  size_t total = kMagicLen + 4 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  std::string out(kMagic, kMagicLen);
  out += '\x01';
  out += '\x00';
  out += char(dict.size() & 0xff);
  out += char(dict.size() >> 8);
  out += dict;
  const size_t nbytes = size_t(host.numel() * dtype_size(host.dtype()));
  if (host.dtype() == DType::b8) {
    const std::vector<uint8_t> v = host.to(DType::u8).to_vector<uint8_t>();
    out.append(reinterpret_cast<const char*>(v.data()), v.size());
  } else {
    out.append(static_cast<const char*>(host.raw_data()), nbytes);
  }
  return out;
}

void save_npy(const std::string& path, const Tensor& t) {
  write_file_atomic(path, serialize_npy(t), "save_npy");
}

}  // namespace ember::record
