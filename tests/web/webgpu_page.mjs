// Runs one suite of the browser tests (webgpu_tests.cpp) in the page: opens WebGPU, makes the
// test module with the device, then for each case begin(), await settle(), finish(). Returns
// {lines, passed, failed, skipped, ms} and prints each line into #out as it goes.
import createEmberTests from './webgpu_tests.mjs';
import {openWebGPU} from './webgpu_device.mjs';

export async function run(suite, filter = '') {
  const out = document.getElementById('out');
  const res = {lines: [], passed: 0, failed: 0, skipped: 0, ms: 0};
  const say = (line) => {
    res.lines.push(line);
    if (out) out.textContent += line + '\n';
  };
  const t0 = performance.now();
  const gpu = await openWebGPU();
  if (!gpu) {
    say('FAIL no WebGPU: navigator.gpu or an adapter is missing');
    res.failed++;
    return res;
  }
  say(`adapter: ${JSON.stringify(gpu.info)}, features: ${gpu.features.join(' ')}`);
  const logs = [];
  const M = await createEmberTests({emberWebGPU: gpu, print: (s) => logs.push(s),
                                    printErr: (s) => logs.push(s)});
  const s = suite === 'runtime' ? 0 : 1;
  const n = M._wt_count(s);
  if (n < 0) {
    say(M.UTF8ToString(M._wt_text()));
    res.failed++;
    return res;
  }
  for (let i = 0; i < n; ++i) {
    const name = M.UTF8ToString(M._wt_name(s, i));
    if (filter && !name.includes(filter)) continue;
    const c0 = performance.now();
    let r = M.UTF8ToString(M._wt_begin(s, i));
    if (!r) {
      let err = '';
      try {
        await M.emberWebGPU.settle();
      } catch (e) {
        err = String(e && e.message || e);
      }
      r = M.ccall('wt_finish', 'string', ['string'], [err]);
    }
    const kind = r.slice(0, 4);  // PASS, SKIP or FAIL
    if (kind === 'PASS') res.passed++;
    else if (kind === 'SKIP') res.skipped++;
    else res.failed++;
    say(`${kind} ${name} (${(performance.now() - c0).toFixed(1)} ms) ${r.slice(5)}`);
  }
  res.ms = performance.now() - t0;
  say(`${suite}: ${res.passed} passed, ${res.failed} failed, ` +
      `${res.skipped} skipped of ${n}${filter ? ` (filter ${filter})` : ''} ` +
      `in ${res.ms.toFixed(0)} ms`);
  for (const l of logs.slice(-20)) res.lines.push('log: ' + l);
  return res;
}
