// The functions web/webgpu_lib.js implements (an emscripten --js-library). Handles index the
// JS side's table of GPU objects (0: none). Sizes and offsets are doubles (JS numbers).
#pragma once
#include <cstdint>

extern "C" {
/// Whether the page gave the module a device (Module.emberWebGPU.device).
int ember_wgpu_available();
/// Whether the device was lost.
int ember_wgpu_lost();
/// The limits, in the order of webgpu::Limit.
void ember_wgpu_limits(double* out);
int ember_wgpu_has_feature(const char* name);
/// "vendor\narchitecture\ndevice\ndescription\nfallback" into buf.
void ember_wgpu_info(char* buf, int cap);
/// The oldest device error not yet taken into buf (its length), or 0 when there is none.
int ember_wgpu_take_error(char* buf, int cap);
int ember_wgpu_create_buffer(double bytes, int uniform);
void ember_wgpu_destroy_buffer(int buffer);
void ember_wgpu_write_buffer(int buffer, double offset, const void* src, double bytes);
int ember_wgpu_create_pipeline(const char* wgsl, int buffers, const char* name);
void ember_wgpu_dispatch(int pipeline, const int32_t* buffers, int n, int params,
                         double params_offset, double params_bytes, double groups);
void ember_wgpu_copy(int src, double src_offset, int dst, double dst_offset, double bytes);
void ember_wgpu_submit();
int ember_wgpu_read_async(int src, double bytes, void* dst, int32_t* status);
void ember_wgpu_cancel_copy(int id);
}

namespace ember::webgpu {
/// Indices into ember_wgpu_limits' output.
enum Limit : int {
  kMaxStorageBuffersPerStage,
  kMaxBindingsPerBindGroup,
  kMaxStorageBufferBindingSize,
  kMaxBufferSize,
  kMaxWorkgroupStorageSize,
  kMaxInvocationsPerWorkgroup,
  kMaxWorkgroupSizeX,
  kMaxWorkgroupsPerDimension,
  kMinUniformBufferOffsetAlignment,
  kMinStorageBufferOffsetAlignment,
  kMaxUniformBufferBindingSize,
  kLimitCount
};
}  // namespace ember::webgpu
