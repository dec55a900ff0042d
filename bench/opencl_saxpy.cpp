// SAXPY on the first OpenCL device, in one process: a plain hand-written OpenCL kernel
// (its own context and queue, the bandwidth ceiling) against Ember's element-wise ops on
// opencl:0 (f32, 16M elements by default): `x + y` (one element-wise kernel moving SAXPY's
// bytes) and `a * x + y` (two kernels until fusion). Prints GB/s (12 bytes per element: x and y
// read, the result written) and Ember's fraction of the plain kernel. Each is timed in 5 rounds
// taken in turn and the best round kept, so load from other processes on a shared machine
// does not favour one side.
// Usage: bench_opencl_saxpy [elements] [iterations]
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "ember/ember.h"

namespace {
using Clock = std::chrono::steady_clock;

void check(cl_int e, const char* what) {
  if (e != CL_SUCCESS) {
    std::fprintf(stderr, "%s failed: %d\n", what, e);
    std::exit(1);
  }
}

const char* kSaxpy =
    "__kernel void saxpy(float a, __global const float* x, __global const float* y,\n"
    "                    __global float* out) {\n"
    "  size_t i = get_global_id(0); out[i] = a * x[i] + y[i];\n}\n"
    // The same in the generated kernels' style: a grid-stride loop, n read from a params buffer.
    "__kernel void saxpy_strided(float a, __global const float* x, __global const float* y,\n"
    "                            __global float* out, __global const uint* p) {\n"
    "  for (uint i = get_global_id(0); i < p[0]; i += get_global_size(0))\n"
    "    out[i] = a * x[i] + y[i];\n}\n";

double plain_saxpy(size_t n, int iters, bool strided) {
  cl_platform_id p;
  cl_device_id d;
  check(clGetPlatformIDs(1, &p, nullptr), "clGetPlatformIDs");
  check(clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &d, nullptr), "clGetDeviceIDs");
  cl_int e;
  cl_context ctx = clCreateContext(nullptr, 1, &d, nullptr, nullptr, &e);
  check(e, "clCreateContext");
  cl_command_queue q = clCreateCommandQueue(ctx, d, 0, &e);
  check(e, "clCreateCommandQueue");
  cl_program prog = clCreateProgramWithSource(ctx, 1, &kSaxpy, nullptr, &e);
  check(clBuildProgram(prog, 1, &d, "", nullptr, nullptr), "clBuildProgram");
  cl_kernel k = clCreateKernel(prog, strided ? "saxpy_strided" : "saxpy", &e);
  std::vector<float> host(n, 1.0f);
  cl_mem x = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n * 4, host.data(), &e);
  cl_mem y = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n * 4, host.data(), &e);
  cl_mem out = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, n * 4, nullptr, &e);
  const float a = 2.0f;
  clSetKernelArg(k, 0, sizeof a, &a);
  clSetKernelArg(k, 1, sizeof x, &x);
  clSetKernelArg(k, 2, sizeof y, &y);
  clSetKernelArg(k, 3, sizeof out, &out);
  const cl_uint words[1] = {cl_uint(n)};
  cl_mem pm = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, 4, (void*)words, &e);
  if (strided) clSetKernelArg(k, 4, sizeof pm, &pm);
  const size_t local = 256, global = strided ? std::min<size_t>(n, 256 << 16) : n;
  auto run = [&] {
    check(clEnqueueNDRangeKernel(q, k, 1, nullptr, &global, strided ? &local : nullptr, 0, nullptr,
                                 nullptr),
          "launch");
  };
  run();
  clFinish(q);
  const auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) run();
  clFinish(q);
  const double s = std::chrono::duration<double>(Clock::now() - t0).count() / iters;
  clReleaseMemObject(x);
  clReleaseMemObject(y);
  clReleaseMemObject(out);
  clReleaseMemObject(pm);
  clReleaseKernel(k);
  clReleaseProgram(prog);
  clReleaseCommandQueue(q);
  clReleaseContext(ctx);
  return 12.0 * double(n) / s / 1e9;
}

// Ember's x + y (axpy false) or 2 * x + y (axpy true) on opencl:0, in GB/s of SAXPY's bytes.
double ember_op(int64_t n, int iters, bool axpy) {
  using namespace ember;
  const Device dev = Device::opencl(0);
  const Tensor x = ones({n}, dev), y = ones({n}, dev);
  auto f = [&] { return axpy ? x * 2.0 + y : x + y; };
  Tensor out = f();
  sync(dev);
  const auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) out = f();
  sync(dev);
  const double s = std::chrono::duration<double>(Clock::now() - t0).count() / iters;
  return 12.0 * double(n) / s / 1e9;
}
}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : (16 << 20);
  const int iters = argc > 2 ? std::atoi(argv[2]) : 20;
  double plain = 0, strided = 0, add = 0, axpy = 0;
  try {
    for (int round = 0; round < 5; ++round) {
      plain = std::max(plain, plain_saxpy(size_t(n), iters, false));
      strided = std::max(strided, plain_saxpy(size_t(n), iters, true));
      add = std::max(add, ember_op(n, iters, false));
      axpy = std::max(axpy, ember_op(n, iters, true));
    }
  } catch (const std::exception& e) {
    std::printf("Ember on opencl:0 failed: %s\n", e.what());
    return 1;
  }
  std::printf("plain OpenCL SAXPY: %.1f GB/s (%lld elements, best of 5 rounds)\n", plain,
              (long long)n);
  std::printf("grid-stride SAXPY:  %.1f GB/s (the generated kernels' loop, local size 256)\n",
              strided);
  std::printf("Ember x + y:        %.1f GB/s   ratio to plain SAXPY %.2f\n", add, add / plain);
  std::printf("Ember a * x + y:    %.1f GB/s   ratio to plain SAXPY %.2f (two kernels)\n", axpy,
              axpy / plain);
  return 0;
}
