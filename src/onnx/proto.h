// Reads ONNX protobuf files (models and TensorProto .pb files) with ONNX's own generated classes
// and converts TensorProto to ember::Tensor (the model loader, the node tests).
#pragma once
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <string>

#include "ember/tensor.h"

namespace ember::onnx::detail {

/// Parses a binary protobuf file into `msg`. Returns false when the file cannot be read/parsed.
bool read_proto(const std::string& path, google::protobuf::Message& msg);

/// The Ember dtype of an ONNX TensorProto data_type; false when Ember has none (string,
/// complex, float8...).
bool dtype_from_onnx(int32_t onnx_type, DType& out);
/// The ONNX TensorProto data_type of an Ember dtype (every one has one).
int32_t dtype_to_onnx(DType t);
/// "FLOAT", "STRING"... for messages.
std::string onnx_type_name(int32_t onnx_type);

/// The file an external-data tensor's "location" names, inside `model_dir`. Throws ember::Error
/// for a missing, absolute or ".."-holding location.
std::filesystem::path external_file(const ::onnx::TensorProto& t, const std::string& model_dir);

/// TensorProto -> Tensor on `device` (raw_data, the typed fields, or external data: a file named
/// by its "location" relative to `model_dir`, from "offset" for "length" bytes). Throws
/// ember::Error for unsupported types, negative dims, a byte count that does not match the
/// shape, and external data that is missing, outside model_dir or too short.
Tensor tensor_from_proto(const ::onnx::TensorProto& t, Device device,
                         const std::string& model_dir = "");

}  // namespace ember::onnx::detail
