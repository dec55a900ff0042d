// Issue 20's speed figures: the MNIST CNN of examples/web-mnist in headless Chromium (WebGPU on
// SwiftShader, as tests/web/cdp.mjs launches it), Ember against ONNX Runtime Web on the same
// model (exported to ONNX by `ember export`) and the same digits, in one run:
//   - Ember wasm (1 thread, N threads: the page is cross-origin isolated) and Ember WebGPU;
//     onnxruntime-web's wasm EP (1 and N threads) and its webgpu EP: cold start (navigation to
//     first prediction, in the page from its timeOrigin, with each library's own download,
//     compile and model load; every file is served with no-store), ms per digit at batch 1
//     (median of --reps after 20 warm-up) and at batch 256 (median of 10; 3 on WebGPU), Ember /
//     ORT ratios; the classes of the first 500 test digits and the logits of 256 compared;
//   - the code each page loaded, gzip -9;
//   - native Ember (bench/wasm_inference.cpp, native) against the same bench as wasm in node
//     (build-wasm/bench_wasm_inference*.js) and the browser's wasm: wasm / native ratios.
//   node --experimental-websocket bench/web_inference.mjs --native-bench BIN [--ember EMBER]
//        [--demo DIR] [--wasm-build DIR] [--threads N] [--reps 200] [--ort-dir DIR]
//   BIN: the native bench_wasm_inference (-DEMBER_BUILD_BENCH=ON, or one file against a native
//   libember: c++ -std=c++20 -O2 -DNDEBUG -Iinclude -Ibench bench/wasm_inference.cpp -LBUILD
//   -lember -Wl,-rpath,BUILD); EMBER: the native `ember` command (default build/tools/ember); DIR: examples/web-mnist as scripts/web-demo.sh leaves it;
//   --wasm-build: default build-wasm. onnxruntime-web 1.31.1 is installed with npm into --ort-dir
//   (default ~/.cache/ember/ort-web) when missing; without it the peer's rows say unavailable.
// Exits 1 (with the reason) when Chromium, a build or the demo's files are missing, or an Ember
// configuration fails; exits 0 otherwise.
import {execFileSync} from 'node:child_process';
import {copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync} from 'node:fs';
import {availableParallelism, cpus, homedir, loadavg, tmpdir} from 'node:os';
import {dirname, join, resolve} from 'node:path';
import {fileURLToPath} from 'node:url';
import {gzipSync} from 'node:zlib';

import {launch, serve} from '../tests/web/cdp.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..');
const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const ember = resolve(arg('--ember', join(root, 'build/tools/ember')));
const demo = resolve(arg('--demo', join(root, 'examples/web-mnist')));
const wasmBuild = resolve(arg('--wasm-build', join(root, 'build-wasm')));
const nativeBench = arg('--native-bench') && resolve(arg('--native-bench'));
const threads = Number(arg('--threads', availableParallelism()));
const reps = Number(arg('--reps', 200));
const ortDir = resolve(arg('--ort-dir', join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'ember/ort-web')));
const ortVersion = '1.31.1';

const die = (msg) => {
  console.error(`web_inference: ${msg}`);
  process.exit(1);
};
const need = (path, how) => existsSync(path) || die(`${path} is missing: ${how}`);
for (const f of ['ember.mjs', 'webgpu_device.mjs', 'wasm/ember.mjs', 'wasm/ember.wasm', 'wasm/ember-threads.mjs',
                 'assets/mnist-cnn.safetensors', 'assets/mnist-test-images.u8', 'assets/mnist-test-labels.u8'])
  need(join(demo, f), 'run scripts/web-demo.sh (or pass --demo)');
need(ember, 'build the native command (scripts/build.sh release ember_cli) or pass --ember');
for (const f of ['bench_wasm_inference.js', 'bench_wasm_inference_threads.js'])
  need(join(wasmBuild, f), 'scripts/build-wasm.sh bench_wasm_inference bench_wasm_inference_threads (or pass --wasm-build)');
if (!nativeBench) die('pass --native-bench: the native bench_wasm_inference (-DEMBER_BUILD_BENCH=ON)');
need(nativeBench, 'build bench_wasm_inference natively with -DEMBER_BUILD_BENCH=ON');
try {
  execFileSync('chromium', ['--version'], {stdio: 'ignore'});  // Debian's wrapper chatters on stderr
} catch {
  die('chromium is missing (apt-get install chromium)');
}

// The peer: onnxruntime-web from npm, into a cache folder (never the repository).
const ortDist = join(ortDir, 'node_modules/onnxruntime-web/dist');
if (!existsSync(join(ortDist, 'ort.wasm.min.mjs'))) {
  try {
    execFileSync('npm', ['install', '--prefix', ortDir, `onnxruntime-web@${ortVersion}`], {stdio: 'ignore'});
  } catch {}
}
const haveOrt = existsSync(join(ortDist, 'ort.wasm.min.mjs'));
if (!haveOrt) console.log(`peer unavailable: onnxruntime-web@${ortVersion} is not in ${ortDir} and npm could not install it`);

const site = mkdtempSync(join(tmpdir(), 'ember-web-bench-'));
process.on('exit', () => rmSync(site, {recursive: true, force: true}));
symlinkSync(demo, join(site, 'ember'));
if (haveOrt) symlinkSync(ortDist, join(site, 'ort'));
copyFileSync(join(here, 'web_inference_page.mjs'), join(site, 'page.mjs'));
writeFileSync(join(site, 'index.html'), '<!doctype html><script type="module" src="page.mjs"></script>\n');
// The same model for the peer; `ember export` checks the file against the model before writing.
const exported = execFileSync(ember, ['export', '--checkpoint', join(demo, 'assets/mnist-cnn.safetensors'),
                                      '--onnx', join(site, 'model.onnx')], {encoding: 'utf8'});
if (!/checked: .*matched/.test(exported)) die(`ember export did not check its file: ${exported}`);

const kib = (n) => (n / 1024).toFixed(0);
const gz = (files) => files.reduce((n, f) => n + gzipSync(readFileSync(f), {level: 9}).length, 0);
const labels = readFileSync(join(demo, 'assets/mnist-test-labels.u8'));
const cpuFlags = (readFileSync('/proc/cpuinfo', 'utf8').match(/^flags\s*:(.*)$/m)?.[1] ?? '').split(' ');
console.log(`machine: ${cpus().length} cores, ${cpus()[0]?.model}, ` +
            `${['avx2', 'avx512f', 'avx512_bf16'].filter((f) => cpuFlags.includes(f)).join(' ')}; ` +
            `load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
console.log(`browser: ${execFileSync('chromium', ['--version'], {encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore']}).trim()}, headless, WebGPU on SwiftShader`);

// ---- the browser ----
const configs = [
  {lib: 'ember', backend: 'wasm', threads: 1},
  {lib: 'ember', backend: 'wasm', threads},
  {lib: 'ember', backend: 'webgpu', threads: 1},
  {lib: 'ort', backend: 'wasm', threads: 1},
  {lib: 'ort', backend: 'wasm', threads},
  {lib: 'ort', backend: 'webgpu', threads: 1},
].filter((c) => c.lib === 'ember' || haveOrt);
const server = await serve(site, {isolate: true});
const browser = await launch({webgpu: true, timeoutMs: 1500000});
const results = [];
try {
  // A first page, so that no configuration pays for the browser's own warm-up.
  const warm = await browser.newPage(server.url + 'index.html?lib=none');
  await warm.evaluate('window.close()').catch(() => {});
  for (const c of configs) {
    const name = `${c.lib === 'ember' ? 'Ember' : 'ORT Web'} ${c.backend}${c.backend === 'wasm' ? `, ${c.threads} thread${c.threads > 1 ? 's' : ''}` : ''}`;
    let page;
    try {
      page = await browser.newPage(server.url + `index.html?lib=${c.lib}&backend=${c.backend}&threads=${c.threads}&reps=${reps}`);
      const r = await Promise.race([
        page.evaluate('window.bench'),
        new Promise((ok, fail) => setTimeout(() => fail(new Error('no result after 300 s')), 300000).unref()),
      ]);
      const code = new Set(r.code.map(decodeURIComponent));  // workers load some files again
      if (code.has('/ember/wasm/ember-threads.mjs')) code.add('/ember/wasm/ember-threads.worker.js');
      const files = [...code].map((p) => join(site, p));
      r.gzip = gz(files);
      r.files = files.map((f) => f.slice(site.length + 1)).join(' + ');
      results.push({...c, name, ...r});
      console.log(`${name}: ${r.info}; cold start ${r.cold.toFixed(0)} ms, batch 1 ${r.b1.toFixed(3)} ms/digit, ` +
                  `batch 256 ${r.b256.toFixed(4)} ms/digit; code ${kib(r.gzip)} KiB gzip -9 (${r.files})`);
    } catch (e) {
      const why = `${e.message.split('\n')[0]}${page ? `; console: ${JSON.stringify(page.consoleMessages.slice(-3))}` : ''}`;
      results.push({...c, name, error: why});
      console.log(`${name}: ${c.lib === 'ort' ? 'unavailable' : 'FAILED'}: ${why}`);
    }
    await page?.evaluate('window.close()').catch(() => {});
  }
} finally {
  await browser.close();
  server.close();
}

// ---- the same predictions ----
const ok = results.filter((r) => !r.error);
for (const r of ok) {
  const right = r.classes.filter((k, i) => k === labels[i]).length;
  console.log(`${r.name}: ${right} / ${r.classes.length} test digits right`);
}
const ref = ok.find((r) => r.lib === 'ember' && r.backend === 'wasm');
for (const r of ok.filter((r) => r !== ref && ref)) {
  const diff = r.classes.filter((k, i) => k !== ref.classes[i]).length;
  const dl = Math.max(...r.logits.map((v, i) => Math.abs(v - ref.logits[i])));
  console.log(`${r.name} against ${ref.name}: ${diff} of ${r.classes.length} classes differ; logits of the first 256 digits within ${dl.toExponential(1)}`);
}

let nativeFailed = false;
// ---- native, and wasm in node (the same bench: random weights, the same layers) ----
const perDigit = (cmd, args) => {
  let out;
  try {
    out = execFileSync(cmd, args, {encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe']});
  } catch (e) {  // e.g. a .js and .wasm of two builds: say so, keep the browser's figures
    console.log(`${cmd} ${args.join(' ')} FAILED: ${String(e.stderr).split('\n')[0].slice(0, 300)}`);
    nativeFailed = true;
    return {};
  }
  const ms = {};
  for (const m of out.matchAll(/^batch (\d+): .* ([\d.]+) ms per digit/gm)) ms[m[1]] = Number(m[2]);
  return ms;
};
const native1 = perDigit(nativeBench, ['--threads', '1']);
const nativeN = perDigit(nativeBench, ['--threads', String(threads)]);
const node1 = perDigit('node', [join(wasmBuild, 'bench_wasm_inference.js')]);
const nodeN = perDigit('node', [join(wasmBuild, 'bench_wasm_inference_threads.js'), '--threads', String(threads)]);

// ---- the table ----
const f = (v, d = 3) => (v === undefined ? '-' : v.toFixed(d));
const ratio = (a, b) => (a === undefined || b === undefined ? '-' : `${(a / b).toFixed(2)}x`);
const get = (lib, backend, t) => ok.find((r) => r.lib === lib && r.backend === backend && r.threads === t);
console.log('\n| configuration | cold start ms | batch 1 ms/digit | batch 256 ms/digit | code KiB (gzip -9) |');
console.log('|---|---|---|---|---|');
for (const r of results)
  console.log(r.error ? `| ${r.name} | ${r.lib === 'ort' ? 'unavailable' : 'FAILED'} | | | |`
                      : `| ${r.name} | ${f(r.cold, 0)} | ${f(r.b1)} | ${f(r.b256, 4)} | ${kib(r.gzip)} |`);
for (const [b, t] of [['wasm', 1], ['wasm', threads], ['webgpu', 1]]) {
  const e = get('ember', b, t), o = get('ort', b, t);
  if (!e || !o) continue;
  console.log(`| Ember / ORT, ${b}${b === 'wasm' ? ` ${t}t` : ''} (< 1: Ember faster, smaller) | ${ratio(e.cold, o.cold)} | ` +
              `${ratio(e.b1, o.b1)} | ${ratio(e.b256, o.b256)} | ${ratio(e.gzip, o.gzip)} |`);
}
console.log('\n| ms per digit | batch 1, 1 thread | batch 1, ' + threads + ' threads | batch 256, 1 thread | batch 256, ' + threads + ' threads |');
console.log('|---|---|---|---|---|');
const b1 = (t) => get('ember', 'wasm', t)?.b1, b256 = (t) => get('ember', 'wasm', t)?.b256;
console.log(`| native Ember | ${f(native1[1], 4)} | ${f(nativeN[1], 4)} | ${f(native1[256], 4)} | ${f(nativeN[256], 4)} |`);
console.log(`| Ember wasm in node | ${f(node1[1], 4)} | ${f(nodeN[1], 4)} | ${f(node1[256], 4)} | ${f(nodeN[256], 4)} |`);
console.log(`| Ember wasm in Chromium | ${f(b1(1), 4)} | ${f(b1(threads), 4)} | ${f(b256(1), 4)} | ${f(b256(threads), 4)} |`);
console.log(`| node wasm / native | ${ratio(node1[1], native1[1])} | ${ratio(nodeN[1], nativeN[1])} | ${ratio(node1[256], native1[256])} | ${ratio(nodeN[256], nativeN[256])} |`);
console.log(`| Chromium wasm / native | ${ratio(b1(1), native1[1])} | ${ratio(b1(threads), nativeN[1])} | ${ratio(b256(1), native1[256])} | ${ratio(b256(threads), nativeN[256])} |`);
console.log(`\nload average at the end: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
const failed = results.filter((r) => r.error && r.lib === 'ember');
if (nativeFailed) die('a native or wasm-in-node bench failed');
if (failed.length) die(`${failed.map((r) => r.name).join(', ')} failed`);
