// The kernel generator's interface: a primitive op (ir::Op) is lowered, once for every GPU
// backend, into launches of kernels written in Ember's C-style kernel language; a renderer turns
// a kernel into one dialect's source (GLSL compute, OpenCL C 1.2; CUDA C later). A GPU backend
// only compiles sources (cached by key), binds memory, writes params and dispatches.
//
// The kernel language (what KernelDef::body and ::functions may use, in every dialect):
// - C expressions and statements, `uint`/`int`/`float`/`bool` and the storage type names
//   f32 f64 f16 bf16s (bf16 stored as 16-bit raw bits) i8 i16 i32 i64 u8 u16 u32 u64 b8
//   (bool stored as one byte), plus casts written as constructor calls: f32(x), i64(x).
// - Buffers by name: `src[i]` reads element i of the buffer declared as `src`.
// - Thread ids (uint, x only): GLOBAL_ID, LOCAL_ID, GROUP_ID, LOCAL_SIZE, NUM_GROUPS,
//   GLOBAL_SIZE (= LOCAL_SIZE * NUM_GROUPS). Launches are 1-d and kernels use grid-stride loops
//   `for (uint i = GLOBAL_ID; i < n; i += GLOBAL_SIZE)` so any size fits Caps::max_groups_x;
//   Index types idx_t / uidx_t (signed / unsigned) with GLOBAL_ID_IDX and GLOBAL_SIZE_IDX: 32-bit
//   in GLSL, the address width in OpenCL C (long, size_t), where loops and offsets in them let CPU
//   drivers vectorise (a uint index may wrap, so consecutive lanes are not provably adjacent).
//   BARRIER() is a workgroup barrier with shared-memory visibility; shared arrays are declared
//   through KernelDef::shared.
// - Params: P_U(k) / P_I(k) / P_F(k) read word k of the params block as uint / int / float;
//   P_D(k) reads words k, k+1 as a double (only in kernels whose dtype is f64).
// Helpers may add prelude macros to render() in a dialect-neutral way (one definition per
// dialect); never write GLSL-only syntax in a body.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ember/dtype.h"
#include "ember/tensor.h"
#include "ir/ops.h"

namespace ember::codegen {

enum class Dialect : uint8_t { glsl, opencl };  // later: cuda, wgsl

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
  bool cpu = false;  // a CPU implementation (lavapipe): kernels favour few, wide memory accesses
};

/// One storage buffer of a kernel: binding i of set 0 is buffers[i]; the params block is the
/// next binding (read-only 32-bit words), a uniform buffer of kParamsBytes.
constexpr uint32_t kParamsBytes = 16384;
/// A kernel storage buffer.
struct BufferDecl {
  std::string name;  // the identifier the body indexes
  DType dtype;       // element type as stored
  bool writable = false;
};

/// A shared (workgroup) array.
struct SharedDecl {
  std::string type;  // a type name of the kernel language ("float", "f64", "uint")
  std::string name;
  uint32_t count;
};

/// A kernel before rendering.
struct KernelDef {
  std::string name;  // "binary_add_f32": for debug dumps and errors
  std::vector<BufferDecl> buffers;
  std::vector<SharedDecl> shared;
  uint32_t local_size = 256;
  std::string functions;  // helper function definitions placed before the entry point
  std::string body;       // statements of the entry point
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

/// Renders `def` into `dialect` for a device with `caps`. Throws ember::Error when the kernel
/// needs a dtype the device lacks.
std::shared_ptr<const Kernel> render(const KernelDef& def, Dialect dialect, const Caps& caps);

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
