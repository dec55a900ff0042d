// The kernel generator's interface: a primitive op (ir::Op) is lowered, once for every GPU
// backend, into launches of kernels built in kir, Ember's typed kernel language (kir.h); the kir
// renderer turns a kernel into one dialect's source (GLSL 450 compute, OpenCL C 1.2, WGSL; CUDA C
// later). A GPU backend only compiles sources (cached by key), binds memory, writes params
// and dispatches.
//
// The ABI every dialect shares: launches are 1-d (x only) and kernels use grid-stride loops, so
// any size fits Caps::max_groups_x; buffer i is binding i of set 0 (an OpenCL kernel argument),
// the params block (read-only 32-bit words, kParamsBytes at most) follows the buffers.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ember/dtype.h"
#include "ember/tensor.h"
#include "ir/ops.h"

namespace ember::codegen {

enum class Dialect : uint8_t { glsl, opencl, wgsl };  // later: cuda

/// What the device can do: lowering rejects dtypes and picks variants from it.
struct Caps {
  bool f16 = false;  // shaderFloat16 + 16-bit storage
  bool f64 = false;  // shaderFloat64
  bool i64 = false;  // shaderInt64
  bool i8 = false;   // shaderInt8 + 8-bit storage (also needed for b8)
  bool i16 = false;  // shaderInt16 + 16-bit storage (also needed for bf16 storage)
  bool cooperative_matrix = false;
  uint32_t subgroup_size = 32;
  uint32_t max_workgroup_size = 256;  // x
  uint32_t max_shared_bytes = 16384;
  uint32_t max_groups_x = 65535;
  /// Storage buffers one kernel may bind besides its params block (Vulkan: the per-stage and
  /// per-set storage buffer limits; OpenCL: from the kernel argument size limit). Bounds the
  /// loads + outputs of a fused graph kernel.
  uint32_t max_buffers = 8;
  bool cpu = false;  // a CPU implementation (lavapipe): kernels favour few, wide memory accesses
};

/// One storage buffer of a kernel: binding i of set 0 is buffers[i]; the params block is the
/// next binding (read-only 32-bit words), a uniform buffer of kParamsBytes.
constexpr uint32_t kParamsBytes = 16384;
/// A kernel storage buffer.
struct BufferDecl {
  std::string name;  // the identifier the kernel source names it by
  DType dtype;       // element type as stored
  bool writable = false;
};

/// A rendered kernel: its source and the key it is cached under (a hash of the source).
struct Kernel {
  std::string name;
  std::string key;
  std::string source;
  Dialect dialect;
  std::vector<BufferDecl> buffers;
  uint32_t local_size;
  std::string build_options;  // compiler options the source needs (OpenCL: clBuildProgram's)
};

/// What a launch binds to one kernel buffer: a tensor of the op (its whole storage; the kernel
/// adds the tensor's offset, passed in params) or scratch buffer `scratch` of the lowering.
struct Binding {
  Tensor tensor;
  int scratch = -1;
};

/// One dispatch: `groups` workgroups of the kernel's local_size threads.
struct Launch {
  std::shared_ptr<const Kernel> kernel;
  std::vector<Binding> bindings;  // one per kernel buffer, in order
  std::vector<uint32_t> params;   // the params block (at least one word)
  uint32_t groups = 1;
};

/// An op as launches, run in order (each sees the writes of the ones before). Scratch buffers
/// are device memory the backend allocates for the duration of the op (contents undefined).
struct Lowering {
  std::vector<int64_t> scratch_bytes;
  std::vector<Launch> launches;
};

/// Lowers one primitive op for a device with `caps` in `dialect`. Kernels are rendered once per
/// key and reused. Throws ember::Error naming the op for a dtype or feature the device lacks.
Lowering lower(const ir::Op& op, Dialect dialect, const Caps& caps);

}  // namespace ember::codegen
