// IDX files (the MNIST format): read_idx and write_idx.
#include <algorithm>
#include <cstring>
#include <string>

#include "core/atomic_file.h"
#include "data/file_util.h"
#include "ember/data/io.h"

namespace ember::data {
namespace {

// IDX type code <-> dtype.
bool dtype_of_code(unsigned char code, DType* out) {
  switch (code) {
    case 0x08:
      *out = DType::u8;
      return true;
    case 0x09:
      *out = DType::i8;
      return true;
    case 0x0B:
      *out = DType::i16;
      return true;
    case 0x0C:
      *out = DType::i32;
      return true;
    case 0x0D:
      *out = DType::f32;
      return true;
    case 0x0E:
      *out = DType::f64;
      return true;
    default:
      return false;
  }
}
int code_of_dtype(DType t) {
  switch (t) {
    case DType::u8:
      return 0x08;
    case DType::i8:
      return 0x09;
    case DType::i16:
      return 0x0B;
    case DType::i32:
      return 0x0C;
    case DType::f32:
      return 0x0D;
    case DType::f64:
      return 0x0E;
    default:
      return -1;
  }
}

std::string hex(unsigned v) {
  const char* d = "0123456789abcdef";
  return std::string("0x") + d[(v >> 4) & 15] + d[v & 15];
}

// Swaps each `es`-byte element between big-endian and the host order (little-endian hosts).
void swap_bytes(unsigned char* p, size_t n, int es) {
  if (es == 1) return;
  const uint16_t probe = 1;
  unsigned char first;
  std::memcpy(&first, &probe, 1);
  if (first == 0) return;  // big-endian host
  for (size_t i = 0; i < n; ++i, p += es)
    for (int a = 0, b = es - 1; a < b; ++a, --b) std::swap(p[a], p[b]);
}

}  // namespace

Tensor read_idx(const std::string& path) {
  const char* op = "read_idx";
  std::vector<unsigned char> bytes = detail::read_file(path, op);
  // A .gz file that is neither gzip nor IDX (an HTML error page saved by a download) is named
  // for what it fails to be ("bad magic" sent the reader to the IDX format).
  const bool named_gz = path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  const bool idx_magic = bytes.size() >= 2 && bytes[0] == 0 && bytes[1] == 0;
  if (named_gz && !detail::is_gzip(bytes) && !idx_magic)
    EMBER_FAIL(op, path, ": not a gzip file (a gzip file starts with 0x1f 0x8b, this one with ",
               bytes.empty()      ? std::string("nothing: it is empty")
               : bytes.size() < 2 ? hex(bytes[0])
                                  : hex(bytes[0]) + " " + hex(bytes[1]),
               ")");
  if (detail::is_gzip(bytes)) bytes = detail::gunzip(bytes, path, op);
  if (bytes.size() < 4)
    EMBER_FAIL(op, path, ": truncated header (", bytes.size(),
               " bytes; an IDX file starts with 4)");
  if (bytes[0] != 0 || bytes[1] != 0)
    EMBER_FAIL(op, path, ": bad magic ", hex(bytes[0]), " ", hex(bytes[1]), " ", hex(bytes[2]), " ",
               hex(bytes[3]), " (an IDX file starts with 0x00 0x00, type, rank)");
  DType dt;
  if (!dtype_of_code(bytes[2], &dt))
    EMBER_FAIL(op, path, ": bad magic: unknown data type code ", hex(bytes[2]),
               " (expected 0x08, 0x09, 0x0b, 0x0c, 0x0d or 0x0e)");
  const size_t rank = bytes[3];
  if (rank == 0) EMBER_FAIL(op, path, ": bad magic: rank 0");
  const size_t header = 4 + 4 * rank;
  if (bytes.size() < header)
    EMBER_FAIL(op, path, ": truncated header: ", rank, " dims need ", header,
               " bytes, the file has ", bytes.size());
  Shape shape(rank);
  const size_t es = size_t(dtype_size(dt));
  for (size_t i = 0; i < rank; ++i) {
    const unsigned char* p = bytes.data() + 4 + 4 * i;
    shape[i] = int64_t(uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]);
  }
  // Every dim is checked, zero or not: an empty tensor's strides still reach the product of its
  // other dims (dims [0, 2^32 - 1, 2^32 - 1] would wrap them).
  const bool has_zero = std::find(shape.begin(), shape.end(), 0) != shape.end();
  const uint64_t kLimit = uint64_t(1) << 48;  // more than any file holds
  uint64_t extent = es;                       // bytes the nonzero dims describe
  for (size_t i = 0; i < rank; ++i) {
    if (shape[i] == 0) continue;
    if (extent > kLimit / uint64_t(shape[i])) {
      if (has_zero)
        EMBER_FAIL(op, path, ": dims/size mismatch: dims ", shape_str(shape),
                   " are too large (the tensor is empty, but dim ", i, " = ", shape[i],
                   " takes its strides beyond 2^48 bytes)");
      EMBER_FAIL(op, path, ": dims/size mismatch: dim ", i, " = ", shape[i],
                 " makes the data larger than any file (", bytes.size(), " bytes)");
    }
    extent *= uint64_t(shape[i]);
  }
  const uint64_t need = has_zero ? 0 : extent;  // bytes of data the dims describe
  const size_t data_bytes = bytes.size() - header;
  if (data_bytes < size_t(need))
    EMBER_FAIL(op, path, ": truncated data: dims ", shape_str(shape), " of ", dtype_name(dt),
               " need ", need, " bytes after the header, the file has ", data_bytes);
  if (data_bytes > size_t(need))
    EMBER_FAIL(op, path, ": dims/size mismatch: dims ", shape_str(shape), " of ", dtype_name(dt),
               " need ", need, " bytes after the header, the file has ", data_bytes, " (",
               data_bytes - size_t(need), " trailing bytes)");
  Tensor out = empty(shape, TensorOptions(dt, Device::cpu()));
  if (need > 0) {
    auto* dst = static_cast<unsigned char*>(out.raw_data());
    std::memcpy(dst, bytes.data() + header, size_t(need));
    swap_bytes(dst, size_t(need) / es, int(es));
  }
  return out;
}

void write_idx(const std::string& path, const Tensor& t) {
  const char* op = "write_idx";
  if (!t.defined()) EMBER_FAIL(op, path, ": tensor is undefined");
  const int code = code_of_dtype(t.dtype());
  if (code < 0)
    EMBER_FAIL(op, path, ": IDX cannot hold ", dtype_name(t.dtype()),
               " (only uint8, int8, int16, int32, float32, float64)");
  if (t.dim() < 1 || t.dim() > 255)
    EMBER_FAIL(op, path, ": IDX needs 1 to 255 dims, got ", shape_str(t.shape()));
  for (int64_t d : t.shape())
    if (d > int64_t(UINT32_MAX)) EMBER_FAIL(op, path, ": dim ", d, " does not fit in 32 bits");
  const Tensor c = (t.device().is_host() ? t : t.to(Device::cpu())).contiguous();
  const size_t es = size_t(c.element_size()), header = 4 + 4 * size_t(c.dim());
  std::vector<unsigned char> bytes(header + size_t(c.numel()) * es);
  bytes[0] = bytes[1] = 0;
  bytes[2] = (unsigned char)code;
  bytes[3] = (unsigned char)c.dim();
  for (int64_t i = 0; i < c.dim(); ++i) {
    const auto d = uint32_t(c.size(i));
    unsigned char* p = bytes.data() + 4 + 4 * i;
    p[0] = (unsigned char)(d >> 24), p[1] = (unsigned char)(d >> 16);
    p[2] = (unsigned char)(d >> 8), p[3] = (unsigned char)d;
  }
  if (c.numel() > 0) {
    std::memcpy(bytes.data() + header, c.raw_data(), size_t(c.numel()) * es);
    swap_bytes(bytes.data() + header, size_t(c.numel()), int(es));
  }
  const bool gz = path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  if (gz) {
    const std::vector<unsigned char> z = detail::gzip(bytes.data(), bytes.size(), op);
    ember::write_file_atomic(path, z.data(), z.size(), op);
  } else {
    ember::write_file_atomic(path, bytes.data(), bytes.size(), op);
  }
}

}  // namespace ember::data
