// The OpenCL ICD loader (libOpenCL.so.1), opened at run time so that Ember starts without one:
// a table of the cl* entry points the backend uses, and the check macro that turns a cl_int
// status into an ember::Error naming the call and the status.
#pragma once
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <string>

namespace ember::cl {

// clang-format off
#define EMBER_CL_FNS(X) \
  X(clGetPlatformIDs) \
  X(clGetPlatformInfo) \
  X(clGetDeviceIDs) \
  X(clGetDeviceInfo) \
  X(clCreateContext) \
  X(clReleaseContext) \
  X(clCreateCommandQueue) \
  X(clReleaseCommandQueue) \
  X(clCreateBuffer) \
  X(clReleaseMemObject) \
  X(clEnqueueWriteBuffer) \
  X(clEnqueueReadBuffer) \
  X(clCreateProgramWithSource) \
  X(clCreateProgramWithBinary) \
  X(clBuildProgram) \
  X(clGetProgramInfo) \
  X(clGetProgramBuildInfo) \
  X(clReleaseProgram) \
  X(clCreateKernel) \
  X(clReleaseKernel) \
  X(clSetKernelArg) \
  X(clEnqueueNDRangeKernel) \
  X(clEnqueueMarkerWithWaitList) \
  X(clFlush) \
  X(clFinish) \
  X(clGetEventInfo) \
  X(clWaitForEvents) \
  X(clReleaseEvent)
// clang-format on

struct Fns {
#define EMBER_CL_MEMBER(name) decltype(&::name) name = nullptr;
  EMBER_CL_FNS(EMBER_CL_MEMBER)
#undef EMBER_CL_MEMBER
};

/// The loaded entry points, or nullptr with `why` set when there is no usable loader.
const Fns* try_loader(std::string* why = nullptr);
/// The loaded entry points; throws ember::Error when libOpenCL.so.1 is missing.
const Fns& fn();
/// "CL_OUT_OF_RESOURCES" for -5, "CL error -N" for codes it does not know.
std::string status_name(cl_int status);
/// Throws ember::Error "[opencl] <call> failed: <status name>".
[[noreturn]] void fail(const char* call, cl_int status);

}  // namespace ember::cl

/// Calls fn().name(args...) and throws naming `name` unless it returns CL_SUCCESS.
#define EMBER_CL(name, ...)                                                         \
  do {                                                                              \
    const cl_int ember_cl_status_ = ::ember::cl::fn().name(__VA_ARGS__);            \
    if (ember_cl_status_ != CL_SUCCESS) ::ember::cl::fail(#name, ember_cl_status_); \
  } while (0)
