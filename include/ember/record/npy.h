// NumPy .npy files (format versions 1.0, 2.0 and 3.0): one array per file, as numpy.save and
// numpy.load write and read them. Reference: numpy's format.py ("A Simple File Format for NumPy
// Arrays", NEP 1).
#pragma once

#include <string>

#include "ember/device.h"
#include "ember/tensor.h"

namespace ember::record {

/// Decodes the bytes of a .npy file; `what` names the source in errors (a file name). Takes
/// little-endian (or byte-order-free) bool, int8-64, uint8-64, float16/32/64 arrays
/// ("<f4", "|b1", "<i8", ...), C or Fortran order; a 0-d array gives a 0-d tensor. Throws
/// ember::Error("[load_npy] <what>: <problem>") for a bad magic string, an unknown version, a
/// header that is not the dict numpy writes, a big-endian, object, string or complex dtype, a
/// negative dim, or a byte count that does not match the shape. Tensors are made on `device`.
Tensor deserialize_npy(const std::string& bytes, const std::string& what,
                       Device device = Device::cpu());
/// Reads `path` with deserialize_npy. Throws also when the file cannot be read.
Tensor load_npy(const std::string& path, Device device = Device::cpu());

/// The bytes of a version 1.0 .npy file holding `t` (any device and layout: copied to the host,
/// C order). bf16 has no numpy dtype: it is written as float32 ("<f4"), exactly. Throws
/// ember::Error for an undefined tensor.
std::string serialize_npy(const Tensor& t);
/// Writes `t` to `path` atomically (a temporary file, fsync, rename). Throws ember::Error
/// ("[save_npy] <path>: ...") when the file cannot be written.
void save_npy(const std::string& path, const Tensor& t);

}  // namespace ember::record
