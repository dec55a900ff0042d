// Model files in the safetensors format (https://github.com/huggingface/safetensors), readable
// and writable by Python's `safetensors` and therefore by PyTorch / transformers.
//
//   record::save_safetensors("model.safetensors", model->state_dict(), {{"arch", "mlp"}});
//   record::load_into(*model, "model.safetensors");           // strict: names, shapes, dtypes
//   auto [tensors, meta] = record::load_safetensors("model.safetensors");
//
// Layout: an 8-byte little-endian header length N, N bytes of JSON
//   {"__metadata__": {"k": "v"}, "name": {"dtype": "F32", "shape": [2, 3],
//    "data_offsets": [begin, end]}, ...}
// padded with spaces to a multiple of 8, then the tensors' bytes, contiguous, row-major,
// little-endian, with offsets relative to the end of the header. As the Python library writes,
// tensors are ordered by dtype (widest first) and then by name, and they cover the data section
// exactly (no gaps, no overlaps).
//
// DTypes: F64 F32 F16 BF16 I64 I32 I16 I8 U64 U32 U16 U8 BOOL (all 13 Ember dtypes). The F8
// types of the format are rejected on load with a clear error.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "ember/nn/module.h"
#include "ember/tensor.h"

namespace ember::record {

/// The "__metadata__" of a safetensors file: string keys to string values.
using Metadata = std::map<std::string, std::string>;

/// What load_safetensors returns: the tensors in name order and the metadata.
struct SafetensorsFile {
  nn::StateDict tensors;
  Metadata metadata;
};

/// The safetensors dtype name ("F32", "BF16", "I64", "BOOL"...) of an Ember dtype.
const char* safetensors_dtype_name(DType t);
/// The Ember dtype of a safetensors dtype name. Throws ember::Error("[safetensors] ...") for an
/// unknown or unsupported name (F8_E4M3, F8_E5M2...).
DType dtype_from_safetensors(const std::string& name);

/// Encodes tensors (any device, any layout; copied to host and made contiguous) and metadata as
/// the bytes of a safetensors file. Throws ember::Error("[save_safetensors] ...") for an
/// undefined tensor, an empty or duplicate name.
std::string serialize_safetensors(const nn::StateDict& tensors, const Metadata& metadata = {});
/// Decodes the bytes of a safetensors file; `what` names the source in errors (a file name).
/// Validates everything before reading data: header length against the byte count, the JSON,
/// each entry's dtype, shape (non-negative integers) and data_offsets (two integers, in range,
/// end - begin == numel * element size), offsets covering the data exactly without overlap,
/// metadata values being strings. Throws ember::Error("[load_safetensors] <what>: <problem>").
/// Tensors are created on `device`.
SafetensorsFile deserialize_safetensors(const std::string& bytes, const std::string& what,
                                        const Device& device = Device::default_device());

/// Writes a safetensors file atomically: a temporary file in the same directory, fsync, rename
/// over `path` (and fsync of the directory), so a crash leaves either the old or the new file,
/// never a partial one, and no temporary file stays behind on failure. Throws ember::Error
/// ("[save_safetensors] <path>: ...") when the file cannot be written.
void save_safetensors(const std::string& path, const nn::StateDict& tensors,
                      const Metadata& metadata = {});
/// Reads and validates a safetensors file (see deserialize_safetensors). Throws ember::Error
/// naming the file and the problem for a missing, unreadable, truncated or corrupt file; never
/// crashes on bad input.
SafetensorsFile load_safetensors(const std::string& path,
                                 const Device& device = Device::default_device());

/// Saves module.state_dict() with `metadata` (save_safetensors).
void save_module(const std::string& path, const nn::Module& module, const Metadata& metadata = {});
/// Loads a file into a module's parameters and buffers (copied to each tensor's device).
/// Checks every name, shape and dtype first and changes nothing on error. strict: a missing or
/// unexpected name is an error too; non-strict: they are returned as
/// "missing: a, b; unexpected: c" (empty when none). A shape or dtype mismatch is always an
/// ember::Error("[load_into] <path>: ...") listing every mismatched name with both shapes/dtypes.
/// Returns the file's metadata through `metadata_out` when given. A training checkpoint
/// (ember/record/checkpoint.h) is refused with an error pointing to load_checkpoint.
std::string load_into(nn::Module& module, const std::string& path, bool strict = true,
                      Metadata* metadata_out = nullptr);

/// Writes `bytes` to `path` atomically (temporary file in the same directory, fsync, rename).
/// Used for every file Ember writes (checkpoints, logs, reports). Throws ember::Error
/// ("[<op>] <path>: <reason>") on failure, removing the temporary file.
void write_file_atomic(const std::string& path, const std::string& bytes,
                       const char* op = "write_file_atomic");

}  // namespace ember::record
