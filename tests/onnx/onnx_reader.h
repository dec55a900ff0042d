// Reads ONNX protobuf files (models and TensorProto .pb files) with ONNX's own generated classes
// and converts TensorProto to ember::Tensor. Used by the ONNX backend node tests.
#pragma once
#include <onnx/onnx_pb.h>

#include <string>

#include "ember/tensor.h"

namespace ember::onnx_test {

/// Parses a binary protobuf file into `msg`. Returns false when the file cannot be read/parsed.
bool read_proto(const std::string& path, google::protobuf::Message& msg);

/// The Ember dtype of an ONNX TensorProto data_type; false when Ember has none (string,
/// complex, float8...).
bool dtype_from_onnx(int32_t onnx_type, DType& out);
/// "FLOAT", "STRING"... for messages.
std::string onnx_type_name(int32_t onnx_type);

/// TensorProto -> Tensor on `device` (raw_data or the typed fields). Throws ember::Error for
/// unsupported types and external data.
Tensor tensor_from_proto(const onnx::TensorProto& t, Device device);

}  // namespace ember::onnx_test
