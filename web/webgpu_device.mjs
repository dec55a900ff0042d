// Opens a WebGPU device for Ember's webgpu backend (src/backends/webgpu, web/webgpu_lib.js):
//   const gpu = await openWebGPU();            // null without WebGPU or an adapter
//   const Module = await createEmberModule({emberWebGPU: gpu});
//   ... await Module.emberWebGPU.settle();     // host copies landed (webgpu::request_host_copy)
// The device asks for the adapter's own limits where Ember's kernels profit from more than the
// defaults (storage buffers per stage, buffer and binding sizes, workgroup storage and size)
// and for 'shader-f16' when the adapter offers it.

const kLimits = [
  'maxStorageBuffersPerShaderStage',
  'maxStorageBufferBindingSize',
  'maxBufferSize',
  'maxComputeWorkgroupStorageSize',
  'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupSizeX',
];

/// {adapter, device, info, features, limits} or null (no navigator.gpu, no adapter, or the
/// device request failed). info: the adapter's GPUAdapterInfo fields as a plain object
/// (vendor, architecture, device, description, isFallbackAdapter).
export async function openWebGPU({powerPreference} = {}) {
  const gpu = globalThis.navigator && navigator.gpu;
  if (!gpu) return null;
  const adapter = await gpu.requestAdapter(powerPreference ? {powerPreference} : {});
  if (!adapter) return null;
  const requiredLimits = {};
  for (const k of kLimits)
    if (adapter.limits[k] !== undefined) requiredLimits[k] = adapter.limits[k];
  const requiredFeatures = adapter.features.has('shader-f16') ? ['shader-f16'] : [];
  let device;
  try {
    device = await adapter.requestDevice({requiredLimits, requiredFeatures});
  } catch (e) {
    console.warn('openWebGPU: requestDevice failed:', e);
    return null;
  }
  const a = adapter.info || (adapter.requestAdapterInfo ? await adapter.requestAdapterInfo() : {});
  const info = {
    vendor: a.vendor || '',
    architecture: a.architecture || '',
    device: a.device || '',
    description: a.description || '',
    isFallbackAdapter: !!(a.isFallbackAdapter || adapter.isFallbackAdapter),
  };
  const limits = {};
  for (const k in device.limits) limits[k] = device.limits[k];
  return {adapter, device, info, features: [...device.features], limits};
}
