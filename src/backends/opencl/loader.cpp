#include "backends/opencl/loader.h"

#include <dlfcn.h>

#include "ember/error.h"

namespace ember::cl {

const Fns* try_loader(std::string* why) {
  struct Loaded {
    Fns fns;
    std::string error;
  };
  static const Loaded loaded = [] {
    Loaded l;
    void* lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libOpenCL.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = dlerror();
      l.error = e ? e : "libOpenCL.so.1 not found";
      return l;
    }
    // Never dlclose: ICDs register atexit handlers inside the loaded objects.
#define EMBER_CL_LOAD(name)                                            \
  l.fns.name = reinterpret_cast<decltype(&::name)>(dlsym(lib, #name)); \
  if (!l.fns.name && l.error.empty()) l.error = "libOpenCL.so.1 has no " #name;
    EMBER_CL_FNS(EMBER_CL_LOAD)
#undef EMBER_CL_LOAD
    return l;
  }();
  if (!loaded.error.empty()) {
    if (why) *why = loaded.error;
    return nullptr;
  }
  return &loaded.fns;
}

const Fns& fn() {
  std::string why;
  const Fns* f = try_loader(&why);
  if (!f)
    EMBER_FAIL("opencl", "no OpenCL loader (", why,
               "); install ocl-icd-libopencl1 and a driver (e.g. pocl-opencl-icd)");
  return *f;
}

std::string status_name(cl_int s) {
  switch (s) {
#define EMBER_CL_NAME(c) \
  case c:                \
    return #c;
    // clang-format off
    EMBER_CL_NAME(CL_DEVICE_NOT_FOUND)
    EMBER_CL_NAME(CL_DEVICE_NOT_AVAILABLE)
    EMBER_CL_NAME(CL_COMPILER_NOT_AVAILABLE)
    EMBER_CL_NAME(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    EMBER_CL_NAME(CL_OUT_OF_RESOURCES)
    EMBER_CL_NAME(CL_OUT_OF_HOST_MEMORY)
    EMBER_CL_NAME(CL_BUILD_PROGRAM_FAILURE)
    EMBER_CL_NAME(CL_INVALID_VALUE)
    EMBER_CL_NAME(CL_INVALID_PLATFORM)
    EMBER_CL_NAME(CL_INVALID_DEVICE)
    EMBER_CL_NAME(CL_INVALID_CONTEXT)
    EMBER_CL_NAME(CL_INVALID_COMMAND_QUEUE)
    EMBER_CL_NAME(CL_INVALID_MEM_OBJECT)
    EMBER_CL_NAME(CL_INVALID_BINARY)
    EMBER_CL_NAME(CL_INVALID_BUILD_OPTIONS)
    EMBER_CL_NAME(CL_INVALID_PROGRAM)
    EMBER_CL_NAME(CL_INVALID_PROGRAM_EXECUTABLE)
    EMBER_CL_NAME(CL_INVALID_KERNEL_NAME)
    EMBER_CL_NAME(CL_INVALID_KERNEL)
    EMBER_CL_NAME(CL_INVALID_ARG_INDEX)
    EMBER_CL_NAME(CL_INVALID_ARG_VALUE)
    EMBER_CL_NAME(CL_INVALID_ARG_SIZE)
    EMBER_CL_NAME(CL_INVALID_KERNEL_ARGS)
    EMBER_CL_NAME(CL_INVALID_WORK_GROUP_SIZE)
    EMBER_CL_NAME(CL_INVALID_WORK_ITEM_SIZE)
    EMBER_CL_NAME(CL_INVALID_GLOBAL_WORK_SIZE)
    EMBER_CL_NAME(CL_INVALID_EVENT)
    EMBER_CL_NAME(CL_INVALID_BUFFER_SIZE)
    EMBER_CL_NAME(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    EMBER_CL_NAME(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
      // clang-format on
#undef EMBER_CL_NAME
  }
  return "CL error " + std::to_string(s);
}

void fail(const char* call, cl_int status) {
  EMBER_FAIL("opencl", call, " failed: ", status_name(status));
}

}  // namespace ember::cl
