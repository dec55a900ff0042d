#include "onnx/proto.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace ember::onnx::detail {

bool read_proto(const std::string& path, google::protobuf::Message& msg) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::stringstream ss;
  ss << f.rdbuf();
  return msg.ParseFromString(ss.str());
}

bool dtype_from_onnx(int32_t t, DType& out) {
  using TP = ::onnx::TensorProto;
  switch (t) {
    case TP::FLOAT:
      out = DType::f32;
      return true;
    case TP::DOUBLE:
      out = DType::f64;
      return true;
    case TP::FLOAT16:
      out = DType::f16;
      return true;
    case TP::BFLOAT16:
      out = DType::bf16;
      return true;
    case TP::INT8:
      out = DType::i8;
      return true;
    case TP::INT16:
      out = DType::i16;
      return true;
    case TP::INT32:
      out = DType::i32;
      return true;
    case TP::INT64:
      out = DType::i64;
      return true;
    case TP::UINT8:
      out = DType::u8;
      return true;
    case TP::UINT16:
      out = DType::u16;
      return true;
    case TP::UINT32:
      out = DType::u32;
      return true;
    case TP::UINT64:
      out = DType::u64;
      return true;
    case TP::BOOL:
      out = DType::b8;
      return true;
    default:
      return false;
  }
}

int32_t dtype_to_onnx(DType t) {
  for (int32_t o = 1; o <= 16; ++o) {
    DType d;
    if (dtype_from_onnx(o, d) && d == t) return o;
  }
  EMBER_FAIL("onnx", "dtype ", dtype_name(t), " has no ONNX type");
}

std::string onnx_type_name(int32_t t) {
  if (::onnx::TensorProto_DataType_IsValid(t))
    return ::onnx::TensorProto_DataType_Name(static_cast<::onnx::TensorProto_DataType>(t));
  return "type" + std::to_string(t);
}

namespace {

// Typed fields: values of `field` converted element by element into the dtype's bytes.
template <typename Dst, typename Field>
std::vector<unsigned char> convert(const Field& field) {
  std::vector<unsigned char> bytes(size_t(field.size()) * sizeof(Dst));
  for (int i = 0; i < field.size(); ++i) {
    Dst v = static_cast<Dst>(field.Get(i));
    std::memcpy(bytes.data() + size_t(i) * sizeof(Dst), &v, sizeof(Dst));
  }
  return bytes;
}

}  // namespace

std::filesystem::path external_file(const ::onnx::TensorProto& t, const std::string& model_dir) {
  namespace fs = std::filesystem;
  std::string location;
  for (const auto& kv : t.external_data())
    if (kv.key() == "location") location = kv.value();
  const fs::path rel(location);
  EMBER_CHECK(!location.empty() && rel.is_relative() &&
                  std::find(rel.begin(), rel.end(), fs::path("..")) == rel.end(),
              "onnx", "tensor '", t.name(), "': external data location '", location,
              "' is not a path inside the model's directory");
  const fs::path dir = model_dir.empty() ? "." : model_dir, file = dir / rel;
  // A symbolic link inside the folder must not lead out of it either.
  std::error_code ec;
  const fs::path real = fs::weakly_canonical(file, ec), base = fs::weakly_canonical(dir, ec);
  const fs::path inside = real.lexically_relative(base);
  EMBER_CHECK(!ec && !inside.empty() && *inside.begin() != "..", "onnx", "tensor '", t.name(),
              "': external data location '", location, "' leads outside the model's directory");
  return file;
}

namespace {

// The bytes of an external-data tensor (ONNX's external_data: location, offset, length).
std::vector<unsigned char> external_bytes(const ::onnx::TensorProto& t, const std::string& dir) {
  int64_t offset = 0, length = -1;
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "offset" || kv.key() == "length") {
      int64_t v = -1;
      try {
        size_t used = 0;
        v = std::stoll(kv.value(), &used);
        if (used != kv.value().size()) v = -1;
      } catch (const std::exception&) {
      }
      EMBER_CHECK(v >= 0, "onnx", "tensor '", t.name(), "': external data ", kv.key(), " '",
                  kv.value(), "' is not a byte count");
      (kv.key() == "offset" ? offset : length) = v;
    }
  }
  namespace fs = std::filesystem;
  const fs::path file = external_file(t, dir);
  std::error_code ec;
  std::ifstream f;
  if (fs::is_regular_file(file, ec)) f.open(file, std::ios::binary);  // not a FIFO or folder
  EMBER_CHECK(f.is_open() && f.good(), "onnx", "tensor '", t.name(),
              "': cannot open external data file '", file.string(), "'");
  f.seekg(0, std::ios::end);
  const int64_t size = int64_t(f.tellg());
  if (length < 0) length = size - offset;
  EMBER_CHECK(offset <= size && length >= 0 && length <= size - offset, "onnx", "tensor '",
              t.name(), "': external data '", file.string(), "' holds ", size,
              " bytes, the tensor reads ", length, " from offset ", offset);
  std::vector<unsigned char> bytes(static_cast<size_t>(length));
  f.seekg(offset);
  f.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(length));
  EMBER_CHECK(f.good() || length == 0, "onnx", "tensor '", t.name(), "': cannot read '",
              file.string(), "'");
  return bytes;
}

}  // namespace

Tensor tensor_from_proto(const ::onnx::TensorProto& t, Device device,
                         const std::string& model_dir) {
  using TP = ::onnx::TensorProto;
  DType dt;
  if (!dtype_from_onnx(t.data_type(), dt))
    EMBER_FAIL("onnx", "tensor '", t.name(), "' has unsupported type ",
               onnx_type_name(t.data_type()));
  Shape shape(t.dims().begin(), t.dims().end());
  int64_t n = 1;
  for (int64_t d : shape) {
    EMBER_CHECK(d >= 0 && (d == 0 || n <= (int64_t(1) << 40) / d), "onnx", "tensor '", t.name(),
                "' has dims ", shape_str(shape), " (a negative or too large dim)");
    n *= d;
  }
  std::vector<unsigned char> bytes;
  if (t.data_location() == TP::EXTERNAL) {
    bytes = external_bytes(t, model_dir);
  } else if (t.has_raw_data()) {
    // raw_data is little-endian, the host order here.
    bytes.assign(t.raw_data().begin(), t.raw_data().end());
  } else {
    switch (t.data_type()) {
      case TP::FLOAT:
        bytes = convert<float>(t.float_data());
        break;
      case TP::DOUBLE:
        bytes = convert<double>(t.double_data());
        break;
      case TP::INT64:
        bytes = convert<int64_t>(t.int64_data());
        break;
      case TP::UINT32:
        bytes = convert<uint32_t>(t.uint64_data());
        break;
      case TP::UINT64:
        bytes = convert<uint64_t>(t.uint64_data());
        break;
      case TP::INT32:
        bytes = convert<int32_t>(t.int32_data());
        break;
      case TP::INT16:
        bytes = convert<int16_t>(t.int32_data());
        break;
      case TP::INT8:
        bytes = convert<int8_t>(t.int32_data());
        break;
      case TP::UINT16:
        bytes = convert<uint16_t>(t.int32_data());
        break;
      case TP::UINT8:
        bytes = convert<uint8_t>(t.int32_data());
        break;
      case TP::BOOL:
        bytes = convert<uint8_t>(t.int32_data());
        break;
      // 16-bit floats are stored as their bit patterns in int32_data.
      case TP::FLOAT16:
      case TP::BFLOAT16:
        bytes = convert<uint16_t>(t.int32_data());
        break;
      default:
        break;
    }
  }
  EMBER_CHECK(int64_t(bytes.size()) == n * dtype_size(dt), "onnx", "tensor '", t.name(), "' holds ",
              bytes.size(), " bytes, shape ", shape_str(shape), " of ", dtype_name(dt), " needs ",
              n * dtype_size(dt));
  if (dt == DType::b8)
    for (auto& b : bytes) b = b != 0;
  return from_blob(bytes.data(), shape, dt, device);
}

}  // namespace ember::onnx::detail
