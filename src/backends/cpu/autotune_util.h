// What the cpu backend's autotuned ops share (runtime/autotune.h): the cpu's Autotuner, its
// identity (the CPU model and the vector features that decide which kernels are fastest), and
// host tensors read as values for check mode. Internal.
#pragma once
#include <string>
#include <vector>

#include "ember/tensor.h"
#include "runtime/autotune.h"

namespace ember::cpu {

/// autotune::for_device(Device::cpu()), looked up once.
autotune::Autotuner& tuner();
/// "cpu | <model name> | avx2 avx512f ... | <n> hardware threads" from /proc/cpuinfo (the
/// features that change which variant wins: avx2, fma, avx512f, avx512_bf16, amx_tile).
std::string cpu_identity();
/// Every element of a host tensor (any strides) as double, in row-major order.
std::vector<double> host_values(const Tensor& t);
/// "f32 [2, 3, 4]".
std::string describe(const Tensor& t);

}  // namespace ember::cpu
