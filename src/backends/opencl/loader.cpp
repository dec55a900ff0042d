#include "backends/opencl/loader.h"

#include <dlfcn.h>

#include <mutex>

#include "ember/error.h"

namespace ember::cl {

namespace {
struct Loaded {
  Functions fn;
  std::string why;
  bool ok = false;
};

const Loaded& loaded() {
  static const Loaded l = [] {
    Loaded r;
    void* h = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) h = dlopen("libOpenCL.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = dlerror();
      r.why = std::string("cannot open libOpenCL.so.1 (install an OpenCL ICD loader and driver, "
                          "e.g. ocl-icd-libopencl1 and pocl-opencl-icd): ") +
              (e ? e : "");
      return r;
    }
#define EMBER_CL_LOAD(name)                                                  \
  r.fn.name = reinterpret_cast<decltype(&::name)>(dlsym(h, #name));          \
  if (!r.fn.name) {                                                          \
    r.why = "libOpenCL.so.1 lacks " #name " (an OpenCL 1.2 loader is needed)"; \
    return r;                                                                \
  }
    EMBER_CL_FUNCTIONS(EMBER_CL_LOAD)
#undef EMBER_CL_LOAD
    r.ok = true;
    return r;
  }();
  return l;
}
}  // namespace

const Functions* functions(std::string* why) {
  const Loaded& l = loaded();
  if (!l.ok && why) *why = l.why;
  return l.ok ? &l.fn : nullptr;
}

const Functions& fn() {
  std::string why;
  const Functions* f = functions(&why);
  if (!f) EMBER_FAIL("opencl", why);
  return *f;
}

std::string error_name(cl_int code) {
  const char* n = "unknown error";
  switch (code) {
#define EMBER_CL_NAME(c) \
  case c:                \
    n = #c;              \
    break;
    EMBER_CL_NAME(CL_DEVICE_NOT_FOUND)
    EMBER_CL_NAME(CL_DEVICE_NOT_AVAILABLE)
    EMBER_CL_NAME(CL_COMPILER_NOT_AVAILABLE)
    EMBER_CL_NAME(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    EMBER_CL_NAME(CL_OUT_OF_RESOURCES)
    EMBER_CL_NAME(CL_OUT_OF_HOST_MEMORY)
    EMBER_CL_NAME(CL_BUILD_PROGRAM_FAILURE)
    EMBER_CL_NAME(CL_INVALID_VALUE)
    EMBER_CL_NAME(CL_INVALID_DEVICE)
    EMBER_CL_NAME(CL_INVALID_CONTEXT)
    EMBER_CL_NAME(CL_INVALID_COMMAND_QUEUE)
    EMBER_CL_NAME(CL_INVALID_MEM_OBJECT)
    EMBER_CL_NAME(CL_INVALID_BINARY)
    EMBER_CL_NAME(CL_INVALID_BUILD_OPTIONS)
    EMBER_CL_NAME(CL_INVALID_PROGRAM)
    EMBER_CL_NAME(CL_INVALID_KERNEL_NAME)
    EMBER_CL_NAME(CL_INVALID_KERNEL)
    EMBER_CL_NAME(CL_INVALID_ARG_INDEX)
    EMBER_CL_NAME(CL_INVALID_ARG_VALUE)
    EMBER_CL_NAME(CL_INVALID_ARG_SIZE)
    EMBER_CL_NAME(CL_INVALID_KERNEL_ARGS)
    EMBER_CL_NAME(CL_INVALID_WORK_GROUP_SIZE)
    EMBER_CL_NAME(CL_INVALID_GLOBAL_WORK_SIZE)
    EMBER_CL_NAME(CL_INVALID_BUFFER_SIZE)
#undef EMBER_CL_NAME
    case -1001:
      n = "CL_PLATFORM_NOT_FOUND_KHR";
      break;
  }
  return std::string(n) + " (" + std::to_string(code) + ")";
}

void fail(const char* call, cl_int code) {
  EMBER_FAIL("opencl", call, " failed: ", error_name(code));
}

}  // namespace ember::cl
