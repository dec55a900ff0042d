// safetensors encode/decode (format of huggingface/safetensors 0.3, as its Python library
// writes it) with full validation of untrusted files.
#include "ember/record/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <vector>

#include "record/file_io.h"

namespace ember::record {

namespace {

struct DTypeName {
  DType dtype;
  const char* name;
  int rank;  // the order of safetensors' Dtype enum (its writer sorts by it, widest first)
};
constexpr DTypeName kNames[] = {
    {DType::b8, "BOOL", 0},   {DType::u8, "U8", 1},    {DType::i8, "I8", 2},
    {DType::i16, "I16", 5},   {DType::u16, "U16", 6},  {DType::f16, "F16", 7},
    {DType::bf16, "BF16", 8}, {DType::i32, "I32", 9},  {DType::u32, "U32", 10},
    {DType::f32, "F32", 11},  {DType::f64, "F64", 12}, {DType::i64, "I64", 13},
    {DType::u64, "U64", 14},
};
int dtype_rank(DType t) {
  for (const auto& n : kNames)
    if (n.dtype == t) return n.rank;
  return 0;
}

// Data is little-endian in the file; swap elements on a big-endian host.
void to_little_endian(char* p, int64_t numel, int esize) {
  if constexpr (std::endian::native == std::endian::little) {
    (void)p, (void)numel, (void)esize;
  } else {
    for (int64_t i = 0; i < numel; ++i) std::reverse(p + i * esize, p + (i + 1) * esize);
  }
}

std::string shape_text(const Shape& s) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << ']';
  return os.str();
}

constexpr const char* kLoad = "load_safetensors";
constexpr uint64_t kMaxHeader = 100'000'000;        // the Python library's limit
constexpr uint64_t kMaxExtent = uint64_t(1) << 62;  // as checked_numel (no tensor is larger)

}  // namespace

const char* safetensors_dtype_name(DType t) {
  for (const auto& n : kNames)
    if (n.dtype == t) return n.name;
  EMBER_FAIL("safetensors", "unknown dtype ", int(t));
}

DType dtype_from_safetensors(const std::string& name) {
  for (const auto& n : kNames)
    if (name == n.name) return n.dtype;
  if (name.rfind("F8", 0) == 0)
    EMBER_FAIL("safetensors", "dtype ", name, " (8-bit float) is not supported by Ember");
  EMBER_FAIL("safetensors", "unknown dtype \"", name, "\"");
}

std::string serialize_safetensors(const nn::StateDict& tensors, const Metadata& metadata) {
  struct Entry {
    std::string name;
    Tensor host;  // contiguous, on the cpu
  };
  std::vector<Entry> entries;
  std::set<std::string> names;
  for (const auto& [name, t] : tensors.items()) {
    if (name.empty()) EMBER_FAIL("save_safetensors", "empty tensor name");
    if (name == "__metadata__") EMBER_FAIL("save_safetensors", "\"__metadata__\" is reserved");
    if (!names.insert(name).second) EMBER_FAIL("save_safetensors", "duplicate name ", name);
    if (!t.defined()) EMBER_FAIL("save_safetensors", "tensor ", name, " is undefined");
    entries.push_back({name, t.detach().to(Device::cpu()).contiguous()});
  }
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    const int ra = dtype_rank(a.host.dtype()), rb = dtype_rank(b.host.dtype());
    return ra != rb ? ra > rb : a.name < b.name;
  });
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
    header["__metadata__"] = meta;
  }
  uint64_t offset = 0;
  for (const auto& e : entries) {
    const uint64_t nbytes = uint64_t(e.host.numel()) * uint64_t(e.host.element_size());
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    j["dtype"] = safetensors_dtype_name(e.host.dtype());
    j["shape"] = nlohmann::ordered_json::array();
    for (int64_t d : e.host.shape()) j["shape"].push_back(uint64_t(d));
    j["data_offsets"] = {offset, offset + nbytes};
    header[e.name] = j;
    offset += nbytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out;
  out.reserve(8 + text.size() + offset);
  const uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out.push_back(char((n >> (8 * i)) & 0xff));
  out += text;
  for (const auto& e : entries) {
    const int64_t nbytes = e.host.numel() * e.host.element_size();
    if (nbytes == 0) continue;
    const size_t at = out.size();
    out.append(static_cast<const char*>(e.host.raw_data()), size_t(nbytes));
    to_little_endian(out.data() + at, e.host.numel(), int(e.host.element_size()));
  }
  return out;
}

SafetensorsFile deserialize_safetensors(const std::string& bytes, const std::string& what,
                                        const Device& device) {
  auto fail = [&](const auto&... msg) -> void { EMBER_FAIL(kLoad, what, ": ", msg...); };
  if (bytes.size() < 8) fail("truncated file (", bytes.size(), " bytes; a header needs 8)");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | uint8_t(bytes[size_t(i)]);
  if (n > kMaxHeader) fail("header length ", n, " exceeds the limit of ", kMaxHeader);
  // Offsets in the messages are the file's: the header starts after the 8-byte length.
  if (n > bytes.size() - 8)
    fail("header length ", n, " (file bytes 8 to ", 8 + n, ") exceeds the file size (",
         bytes.size(), " bytes): truncated or not ", "a safetensors file");
  const std::string text = bytes.substr(8, size_t(n));
  if (text.empty() || text[0] != '{') fail("header is not a JSON object");
  // JSON keeps the last of repeated keys silently; a header naming a tensor twice is corrupt.
  std::vector<std::set<std::string>> keys_at_depth;
  std::string repeated;
  const nlohmann::json::parser_callback_t on_event = [&](int depth, nlohmann::json::parse_event_t e,
                                                         nlohmann::json& parsed) {
    if (e == nlohmann::json::parse_event_t::object_start) {
      keys_at_depth.resize(size_t(depth) + 1);
      keys_at_depth[size_t(depth)].clear();
    } else if (e == nlohmann::json::parse_event_t::key && repeated.empty() && depth >= 1 &&
               size_t(depth) <= keys_at_depth.size()) {
      if (!keys_at_depth[size_t(depth) - 1].insert(parsed.get<std::string>()).second)
        repeated = parsed.get<std::string>();
    }
    return true;
  };
  nlohmann::json header = nlohmann::json::parse(text, on_event, /*allow_exceptions=*/false);
  if (header.is_discarded()) fail("header is not valid JSON");
  if (!repeated.empty()) fail("header names \"", repeated, "\" twice");
  if (!header.is_object()) fail("header is not a JSON object");
  const uint64_t data_size = bytes.size() - 8 - n;
  const char* data = bytes.data() + 8 + n;

  SafetensorsFile out;
  struct Span {
    uint64_t begin, end;
    std::string name;
  };
  std::vector<Span> spans;
  std::vector<std::tuple<std::string, DType, Shape, uint64_t, uint64_t>> entries;
  for (const auto& [name, v] : header.items()) {
    if (name == "__metadata__") {
      if (!v.is_object()) fail("__metadata__ is not an object");
      for (const auto& [k, mv] : v.items()) {
        if (!mv.is_string()) fail("__metadata__ value of \"", k, "\" is not a string");
        out.metadata[k] = mv.get<std::string>();
      }
      continue;
    }
    if (!v.is_object()) fail("entry \"", name, "\" is not an object");
    for (const char* key : {"dtype", "shape", "data_offsets"})
      if (!v.contains(key)) fail("entry \"", name, "\" has no ", key);
    if (!v["dtype"].is_string()) fail("entry \"", name, "\": dtype is not a string");
    DType dtype = DType::f32;
    try {
      dtype = dtype_from_safetensors(v["dtype"].get<std::string>());
    } catch (const Error& e) {
      fail("entry \"", name, "\": ", e.what());
    }
    const auto& js = v["shape"];
    if (!js.is_array()) fail("entry \"", name, "\": shape is not an array");
    Shape shape;
    // extent: the product of the nonzero dims, which the strides reach even when numel is 0
    // (shape [0, 2^62, 2^62] holds nothing, but its first stride is 2^124).
    uint64_t numel = 1, extent = 1;
    bool overflow = false;
    for (const auto& d : js) {
      if (!d.is_number_unsigned())
        fail("entry \"", name, "\": shape holds a non-integer or negative");
      const uint64_t dim = d.get<uint64_t>();
      if (dim > uint64_t(INT64_MAX) || __builtin_mul_overflow(numel, dim, &numel)) overflow = true;
      if (dim != 0 && (__builtin_mul_overflow(extent, dim, &extent) || extent > kMaxExtent))
        overflow = true;
      shape.push_back(int64_t(dim));
    }
    const auto& jo = v["data_offsets"];
    if (!jo.is_array() || jo.size() != 2 || !jo[0].is_number_unsigned() ||
        !jo[1].is_number_unsigned())
      fail("entry \"", name, "\": data_offsets must be two non-negative integers");
    const uint64_t b = jo[0].get<uint64_t>(), e = jo[1].get<uint64_t>();
    uint64_t nbytes = 0;
    if (overflow || __builtin_mul_overflow(numel, uint64_t(dtype_size(dtype)), &nbytes))
      fail("entry \"", name, "\": shape ", shape_text(shape), " is too large");
    if (e < b) fail("entry \"", name, "\": data_offsets [", b, ", ", e, "] end before they begin");
    if (e > data_size)
      fail("entry \"", name, "\": data_offsets [", b, ", ", e, "] (file bytes ", 8 + n + b, " to ",
           8 + n + e, ") are out of range (the data section is file bytes ", 8 + n, " to ",
           bytes.size(), "; truncated file?)");
    if (e - b != nbytes)
      fail("entry \"", name, "\": data_offsets [", b, ", ", e, "] hold ", e - b, " bytes but ",
           v["dtype"].get<std::string>(), " ", shape_text(shape), " needs ", nbytes);
    spans.push_back({b, e, name});
    entries.emplace_back(name, dtype, std::move(shape), b, e);
  }
  // Tensors must tile the data section exactly (as the Python library checks).
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t at = 0;
  for (const auto& s : spans) {
    if (s.begin < at) fail("tensor \"", s.name, "\" overlaps the previous tensor's data");
    if (s.begin > at)
      fail("gap in the data before tensor \"", s.name, "\" (data offset ", at, ", file byte ",
           8 + n + at, ")");
    at = s.end;
  }
  if (at != data_size)
    fail("the tensors cover ", at, " bytes but the data section has ", data_size);

  for (const auto& [name, dtype, shape, b, e] : entries) {
    const int64_t numel = int64_t((e - b) / uint64_t(dtype_size(dtype)));
    std::vector<char> buf(data + b, data + e);
    to_little_endian(buf.data(), numel, dtype_size(dtype));
    if (dtype == DType::b8)
      for (char c : buf)
        if (c != 0 && c != 1) fail("tensor \"", name, "\" holds a BOOL byte other than 0 or 1");
    static const char kDummy[16] = {};
    out.tensors.set(name, from_blob(buf.empty() ? kDummy : buf.data(), shape, dtype, device));
  }
  return out;
}

void save_safetensors(const std::string& path, const nn::StateDict& tensors,
                      const Metadata& metadata) {
  std::string bytes;
  try {
    bytes = serialize_safetensors(tensors, metadata);
  } catch (const Error& e) {
    EMBER_FAIL("save_safetensors", path, ": ", e.what());
  }
  write_file_atomic(path, bytes, "save_safetensors");
}

SafetensorsFile load_safetensors(const std::string& path, const Device& device) {
  return deserialize_safetensors(detail::read_whole_file(path, kLoad), path, device);
}

void save_module(const std::string& path, const nn::Module& module, const Metadata& metadata) {
  save_safetensors(path, module.state_dict(), metadata);
}

std::string load_into(nn::Module& module, const std::string& path, bool strict,
                      Metadata* metadata_out) {
  SafetensorsFile f = load_safetensors(path, Device::cpu());
  if (auto it = f.metadata.find("format");
      it != f.metadata.end() && it->second.rfind("ember.checkpoint", 0) == 0)
    EMBER_FAIL("load_into", path,
               ": this is a training checkpoint (model, optimizer and training state), not a "
               "model file: restore it with record::load_checkpoint(path, {&model, &optimizer}) "
               "or Learner::resume, or take its weights with record::read_checkpoint(path).model");
  const nn::StateDict own = module.state_dict();
  std::vector<std::string> missing, unexpected, bad;
  for (const auto& [name, t] : own.items()) {
    if (!f.tensors.contains(name)) {
      missing.push_back(name);
      continue;
    }
    const Tensor& v = f.tensors.at(name);
    if (v.shape() != t.shape() || v.dtype() != t.dtype())
      bad.push_back(name + " (file " + dtype_name(v.dtype()) + " " + shape_text(v.shape()) +
                    ", model " + dtype_name(t.dtype()) + " " + shape_text(t.shape()) + ")");
  }
  for (const auto& [name, t] : f.tensors.items())
    if (!own.contains(name)) unexpected.push_back(name);
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
    return s;
  };
  if (!bad.empty()) EMBER_FAIL("load_into", path, ": mismatched tensors: ", join(bad));
  std::string report;
  if (!missing.empty()) report += "missing: " + join(missing);
  if (!unexpected.empty())
    report += (report.empty() ? "" : "; ") + ("unexpected: " + join(unexpected));
  if (strict && !report.empty()) EMBER_FAIL("load_into", path, ": ", report);
  nn::StateDict subset;
  for (const auto& [name, t] : own.items())
    if (f.tensors.contains(name)) subset.set(name, f.tensors.at(name));
  module.load_state_dict(subset, /*strict=*/false);
  if (metadata_out) *metadata_out = std::move(f.metadata);
  return report;
}

}  // namespace ember::record
