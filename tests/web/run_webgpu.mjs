// The browser tests' driver (ctest web/webgpu_runtime, web/webgpu_optable):
//   node --experimental-websocket tests/web/run_webgpu.mjs <wasm build>/web-tests runtime|optable
// Serves the folder on 127.0.0.1, opens webgpu_tests.html in headless Chromium (WebGPU on
// SwiftShader), runs the suite (webgpu_page.mjs) and prints its lines. Exits 1 on any failure
// or when no case ran, 2 on the global timeout.
import {existsSync} from 'node:fs';
import {join} from 'node:path';
import {launch, serve} from './cdp.mjs';

const [dir, suite] = process.argv.slice(2);
if (!dir || !['runtime', 'optable'].includes(suite)) {
  console.error('usage: run_webgpu.mjs <wasm build>/web-tests runtime|optable');
  process.exit(1);
}
for (const f of ['webgpu_tests.mjs', 'webgpu_tests.wasm', 'webgpu_page.mjs', 'webgpu_device.mjs'])
  if (!existsSync(join(dir, f))) {
    console.error(`run_webgpu: ${join(dir, f)} is missing: build the wasm tests first ` +
                  '(scripts/build-wasm.sh webgpu_tests, or set EMBER_WASM_DIR)');
    process.exit(1);
  }
const chromium = process.env.EMBER_CHROMIUM || 'chromium';
const server = await serve(dir);
let browser;
let code = 1;
try {
  browser = await launch({webgpu: true, timeoutMs: 540000, chromium});
  const page = await browser.newPage(server.url + 'webgpu_tests.html');
  const t0 = Date.now();
  const r = await page.evaluate(`import('./webgpu_page.mjs').then((m) => m.run(${JSON.stringify(suite)}))`);
  for (const l of r.lines) console.log(l);
  const ran = r.passed + r.failed;
  console.log(`run_webgpu: ${suite} took ${Date.now() - t0} ms in the page`);
  if (ran === 0) console.error('run_webgpu: no case ran');
  code = r.failed === 0 && ran > 0 ? 0 : 1;
  if (code) for (const m of page.consoleMessages.slice(-20)) console.error(`console ${m.type}: ${m.text}`);
} catch (e) {
  console.error(`run_webgpu: ${e.message}`);
} finally {
  await browser?.close();
  server.close();
}
process.exit(code);
