#include "onnx/onnx_reader.h"

#include <fstream>
#include <sstream>
#include <vector>

namespace ember::onnx_test {

bool read_proto(const std::string& path, google::protobuf::Message& msg) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::stringstream ss;
  ss << f.rdbuf();
  return msg.ParseFromString(ss.str());
}

bool dtype_from_onnx(int32_t t, DType& out) {
  using TP = onnx::TensorProto;
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

std::string onnx_type_name(int32_t t) {
  if (onnx::TensorProto_DataType_IsValid(t))
    return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(t));
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

Tensor tensor_from_proto(const onnx::TensorProto& t, Device device) {
  using TP = onnx::TensorProto;
  DType dt;
  if (!dtype_from_onnx(t.data_type(), dt))
    EMBER_FAIL("onnx", "tensor '", t.name(), "' has unsupported type ",
               onnx_type_name(t.data_type()));
  if (t.data_location() == TP::EXTERNAL)
    EMBER_FAIL("onnx", "tensor '", t.name(), "' uses external data");
  Shape shape(t.dims().begin(), t.dims().end());
  const int64_t n = numel_of(shape);
  std::vector<unsigned char> bytes;
  if (t.has_raw_data()) {
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

}  // namespace ember::onnx_test
