// What the renderers of the kernel language share (render.cpp: GLSL; render_opencl.cpp: OpenCL
// C): the feature groups a kernel's types need. Internal to src/codegen.
#pragma once
#include <string>

#include "codegen/kernel.h"

namespace ember::codegen {

/// Feature groups a kernel's types need (from its buffers, shared arrays and identifiers).
struct Needs {
  bool f16 = false, f64 = false, i64 = false, i8 = false, i16 = false, bf16 = false;
};

/// OpenCL C 1.2 source of `def` (the ABI is described in render_opencl.cpp); `lib` is the
/// kernel-language library code its body and functions call (library_code). Throws ember::Error
/// when a helper function uses a buffer, a shared array or the params (kernel arguments there).
std::string render_opencl(const KernelDef& def, const Needs& n, const std::string& lib);

/// The OpenCL build options every kernel of render_opencl is compiled with.
const char* opencl_build_options();

}  // namespace ember::codegen
