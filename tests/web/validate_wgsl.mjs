// node --experimental-websocket validate_wgsl.mjs DIR: compiles every DIR/*.wgsl (from
// ember_wgsl_dump) in headless Chromium's WebGPU (Tint on SwiftShader) as a compute pipeline
// with the kernel ABI's explicit layout (bindings 0..n-1 storage, n uniform) and reports each
// compile or validation error with the kernel's file name. Exits 1 on any error or when no
// kernel was checked. Kernels that `enable f16` are counted as skipped when the adapter lacks
// shader-f16 (SwiftShader does).
import {mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';

import {launch, serve} from './cdp.mjs';

const dir = process.argv.slice(2).find((a) => !a.startsWith('--'));
if (!dir) {
  console.error('usage: validate_wgsl.mjs DIR');
  process.exit(2);
}
const files = readdirSync(dir).filter((f) => f.endsWith('.wgsl')).sort();
// SwiftShader's compiler takes seconds to minutes over a tiled matmul: those kernels are
// validated as shader modules (Tint's whole WGSL validation), the others also as pipelines with
// the ABI's layout (and compiled). --all-pipelines makes pipelines of every kernel.
const allPipelines = process.argv.includes('--all-pipelines');
const kernels = files.map((name) => ({name, source: readFileSync(join(dir, name), 'utf8'),
                                      pipeline: allPipelines || !/tiled/.test(name)}));

// The page: validates the kernels posted to it in batches.
const page = `<!doctype html><title>validate wgsl</title><script>
let device, hasF16;
async function init() {
  const adapter = await navigator.gpu?.requestAdapter();
  if (!adapter) throw new Error('no WebGPU adapter');
  hasF16 = adapter.features.has('shader-f16');
  const requiredLimits = {};
  for (const k of ['maxStorageBuffersPerShaderStage', 'maxComputeWorkgroupStorageSize',
                   'maxComputeInvocationsPerWorkgroup', 'maxComputeWorkgroupSizeX',
                   'maxStorageBufferBindingSize', 'maxUniformBufferBindingSize'])
    requiredLimits[k] = adapter.limits[k];
  device = await adapter.requestDevice({requiredFeatures: hasF16 ? ['shader-f16'] : [],
                                        requiredLimits});
  const info = adapter.info || {};
  return {vendor: info.vendor, architecture: info.architecture, device: info.device,
          description: info.description, f16: hasF16, limits: requiredLimits};
}
async function validate(k, pipeline) {
  if (/^enable f16;/m.test(k.source) && !hasF16) return {skipped: true};
  const nbuf = (k.source.match(/var<storage, read_write>/g) || []).length;
  const entries = [];
  for (let i = 0; i < nbuf; ++i)
    entries.push({binding: i, visibility: GPUShaderStage.COMPUTE, buffer: {type: 'storage'}});
  entries.push({binding: nbuf, visibility: GPUShaderStage.COMPUTE, buffer: {type: 'uniform'}});
  device.pushErrorScope('validation');
  const module = device.createShaderModule({code: k.source});
  const info = await module.getCompilationInfo();
  const messages = info.messages.filter((m) => m.type === 'error')
      .map((m) => m.lineNum + ':' + m.linePos + ': ' + m.message);
  const layout = device.createPipelineLayout(
      {bindGroupLayouts: [device.createBindGroupLayout({entries})]});
  if (pipeline)
    await device.createComputePipelineAsync({layout, compute: {module, entryPoint: 'main'}})
        .catch((e) => messages.push('pipeline: ' + e.message));
  const err = await device.popErrorScope();
  if (err && !messages.length) messages.push(err.message);
  return {errors: messages};
}
// A kernel that loses the device is reported, and the device made anew.
async function validateAll(ks) {
  const out = [];
  for (const k of ks) {
    const t0 = performance.now();
    let r;
    try {
      r = await validate(k, k.pipeline);
    } catch (e) {
      r = {errors: ['device lost or validation threw: ' + e.message]};
      await init();
    }
    r.ms = performance.now() - t0;
    out.push(r);
  }
  return out;
}
</script>`;

const root = mkdtempSync(join(tmpdir(), 'ember-wgsl-'));
writeFileSync(join(root, 'index.html'), page);
const server = await serve(root);
const browser = await launch({webgpu: true, timeoutMs: 540000});
let failed = 0, checked = 0, skipped = 0, pipelines = 0;
try {
  const p = await browser.newPage(server.url);
  const info = await p.evaluate('init()');
  console.log('adapter:', JSON.stringify(info));
  const batch = 50;
  for (let i = 0; i < kernels.length; i += batch) {
    const ks = kernels.slice(i, i + batch);
    const results = await p.evaluate(`validateAll(${JSON.stringify(ks)})`);
    console.log(`${i + ks.length}/${kernels.length} kernels`);
    results.forEach((r, j) => {
      if (r.ms > 5000) console.log(`slow: ${ks[j].name} ${Math.round(r.ms)} ms`);
      if (r.skipped) return ++skipped;
      ++checked;
      if (ks[j].pipeline) ++pipelines;
      if (r.errors.length) {
        ++failed;
        console.error(`FAIL ${ks[j].name}:\n  ${r.errors.join('\n  ')}`);
      }
    });
  }
} finally {
  await browser.close();
  server.close();
  rmSync(root, {recursive: true, force: true});
}
console.log(`validate_wgsl: ${checked} kernels checked (${pipelines} also as pipelines), ` +
            `${failed} failed, ${skipped} skipped ` +
            `(f16 kernels on an adapter without shader-f16)`);
process.exit(failed || checked === 0 ? 1 : 0);
