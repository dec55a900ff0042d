// The OpenCL ICD loader (libOpenCL.so.1), opened with dlopen at run time as Vulkan's loader is:
// a binary built with the OpenCL backend starts and runs cpu/ref on machines without OpenCL.
#pragma once
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

#include <string>

namespace ember::cl {

#define EMBER_CL_FUNCTIONS(X)                                                                \
  X(clGetPlatformIDs) X(clGetPlatformInfo) X(clGetDeviceIDs) X(clGetDeviceInfo)              \
  X(clCreateContext) X(clReleaseContext) X(clCreateCommandQueue) X(clReleaseCommandQueue)    \
  X(clCreateBuffer) X(clReleaseMemObject) X(clEnqueueWriteBuffer) X(clEnqueueReadBuffer)     \
  X(clCreateProgramWithSource) X(clCreateProgramWithBinary) X(clBuildProgram)                \
  X(clGetProgramBuildInfo) X(clGetProgramInfo) X(clReleaseProgram) X(clCreateKernel)         \
  X(clReleaseKernel) X(clSetKernelArg) X(clEnqueueNDRangeKernel) X(clFlush) X(clFinish)      \
  X(clEnqueueMarkerWithWaitList) X(clGetEventInfo) X(clWaitForEvents) X(clReleaseEvent)

/// The entry points Ember uses, resolved from the loader.
struct Functions {
#define EMBER_CL_MEMBER(name) decltype(&::name) name = nullptr;
  EMBER_CL_FUNCTIONS(EMBER_CL_MEMBER)
#undef EMBER_CL_MEMBER
};

/// The loader's functions, or nullptr (with `why` set) when libOpenCL.so.1 cannot be opened or
/// lacks an entry point. Opened once; thread-safe.
const Functions* functions(std::string* why = nullptr);
/// The loaded functions; throws ember::Error "[opencl] ..." without a loader.
const Functions& fn();
/// "CL_OUT_OF_RESOURCES (-5)".
std::string error_name(cl_int code);
/// Throws ember::Error "[opencl] <call> failed: <error_name>".
[[noreturn]] void fail(const char* call, cl_int code);

}  // namespace ember::cl

#define EMBER_CL_CHECK(call)                                         \
  do {                                                               \
    const cl_int ember_cl_r_ = (call);                               \
    if (ember_cl_r_ != CL_SUCCESS) ::ember::cl::fail(#call, ember_cl_r_); \
  } while (0)
