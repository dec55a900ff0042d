// End-to-end test of the browser demo (examples/web-mnist, built by scripts/web-demo.sh) in
// headless Chromium: drawing digits, the 2,000 MNIST test digits on wasm and WebGPU against the
// native `ember eval`, Fashion-MNIST mode, a corrupt model's error, cold start and per-digit
// times (reported, not asserted), and a screenshot.
//   node --experimental-websocket tests/web/demo_test.mjs --ember build/tools/ember
//        [--out DIR (screenshot)] [--only wasm]
// Fails (exit 1) when anything is missing (chromium, the built demo, the ember command), any
// check fails, or no check ran.
import {execFileSync} from 'node:child_process';
import {existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {dirname, join, resolve} from 'node:path';
import {fileURLToPath} from 'node:url';
import {gzipSync} from 'node:zlib';

import {launch, serve} from './cdp.mjs';
import {writePng} from './png.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const demo = join(root, 'examples/web-mnist');
const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const ember = resolve(arg('--ember', join(root, 'build/tools/ember')));
const outDir = resolve(arg('--out', tmpdir()));
const backends = arg('--only') ? [arg('--only')] : ['wasm', 'webgpu'];

let checks = 0, failures = 0;
function check(name, ok, detail = '') {
  ++checks;
  if (!ok) ++failures;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${detail ? ': ' + detail : ''}`);
}
const report = (name, value) => console.log(`     ${name}: ${value}`);

for (const f of ['ember.mjs', 'wasm/ember.mjs', 'wasm/ember.wasm', 'assets/mnist-cnn.safetensors',
                 'assets/fashion-mnist-cnn.safetensors', 'assets/mnist-test-images.u8',
                 'assets/fashion-test-images.u8'])
  if (!existsSync(join(demo, f))) {
    console.error(`FAIL examples/web-mnist/${f} is missing: run scripts/web-demo.sh`);
    process.exit(1);
  }
if (!existsSync(ember)) {
  console.error(`FAIL the ember command ${ember} is missing (scripts/build.sh release ember_cli)`);
  process.exit(1);
}

const modelFile = join(demo, 'assets/mnist-cnn.safetensors');
const images = readFileSync(join(demo, 'assets/mnist-test-images.u8'));
const labels = readFileSync(join(demo, 'assets/mnist-test-labels.u8'));

// The native figures: accuracy on the 2,000 test digits, and the class of the first few.
const evalOut = execFileSync(ember, ['eval', '--checkpoint', modelFile, '--data', join(root, 'data/mnist')],
                             {encoding: 'utf8'});
const nativeCorrect = Math.round(Number(/test accuracy: ([\d.]+)%/.exec(evalOut)[1]) * labels.length / 100);
report('native ember eval', `${nativeCorrect} / ${labels.length} correct`);
const tmp = mkdtempSync(join(tmpdir(), 'ember-demo-test-'));
const nativeClass = (i) => {
  const png = join(tmp, `digit${i}.png`);
  writePng(png, images.subarray(784 * i, 784 * (i + 1)), 28, 28);
  const out = execFileSync(ember, ['predict', '--checkpoint', modelFile, png], {encoding: 'utf8'});
  return Number(/class: (\d+)/.exec(out)[1]);
};

const server = await serve(demo, {isolate: true});
const browser = await launch({webgpu: true, timeoutMs: 600000});
const corrupt = join(demo, 'assets/corrupt-test.safetensors');
try {
  const open = async (page, what) => {
    const p = await browser.newPage(server.url + page);
    try {
      // window.demo appears once the page's module ran (after its top-level awaits).
      // Bounded: a backend that never settles fails this page, not the whole run.
      await Promise.race([
        p.evaluate(`new Promise((ok) => { const t = () => window.demo ? ok(demo.ready) : setTimeout(t, 10); t(); })`),
        new Promise((ok, fail) => setTimeout(() => fail(new Error('no model after 90 s')), 90000).unref()),
      ]);
    } catch (e) {
      throw new Error(`${page}: ${e.message}; console: ${JSON.stringify(p.consoleMessages)}`);
    }
    return p;
  };

  // (c) cold start and (b) the 2,000 digits, (d) per-digit times, on each backend.
  const preds = {};
  for (const b of backends) {
    const t0 = Date.now();
    let page;
    try {
      page = await open(`index.html?backend=${b}`);
    } catch (e) {
      check(`${b}: the page loads the model`, false, e.message);
      continue;
    }
    const got = await page.evaluate('demo.ember.backend');
    check(`${b}: the page runs on ${b}`, got === b, `backend ${got} (${await page.evaluate('demo.ember.info')})`);
    const first = await page.evaluate('demo.firstPrediction');
    report(`${b} cold start (navigation to first prediction)`,
           `${first.at.toFixed(0)} ms in the page (${Date.now() - t0} ms with the tab's creation); first inference ${first.ms.toFixed(1)} ms`);
    const r = await page.evaluate(`(async () => {
      const px = new Uint8Array(await (await fetch('assets/mnist-test-images.u8')).arrayBuffer());
      const out = [];
      for (let i = 0; i < px.length / 784; i += 100) {
        const r = await demo.model.predict(px.subarray(784 * i, 784 * Math.min(i + 100, px.length / 784)));
        out.push(...r.classes);
      }
      const ms = [];
      for (let i = 0; i < 30; ++i) ms.push((await demo.model.predict(px.subarray(784 * i, 784 * (i + 1)))).ms);
      ms.sort((a, b) => a - b);
      return {classes: out, ms: ms[15], msMin: ms[0]};
    })()`);
    preds[b] = r.classes;
    const correct = r.classes.filter((c, i) => c === labels[i]).length;
    check(`${b}: accuracy on the ${labels.length} test digits equals native`, correct === nativeCorrect,
          `${correct} correct (native ${nativeCorrect})`);
    report(`${b} per-digit inference`, `median ${r.ms.toFixed(2)} ms, best ${r.msMin.toFixed(2)} ms (batch of 1)`);
    await page.evaluate('window.close()').catch(() => {});
  }
  if (preds.wasm && preds.webgpu) {
    const diff = preds.wasm.filter((c, i) => c !== preds.webgpu[i]).length;
    report('predictions that differ between wasm and webgpu', `${diff} of ${labels.length}`);
  }

  // (a) digits drawn with the mouse, traced from test digits the native model gets right.
  const page = await open('index.html?backend=wasm');
  const pad = await page.evaluate('(() => { const r = document.getElementById("pad").getBoundingClientRect(); return {x: r.left, y: r.top, w: r.width}; })()');
  const draw = async (i) => {
    await page.evaluate('demo.clear(), demo.settled()');
    const s = pad.w / 28, px = images.subarray(784 * i, 784 * (i + 1));
    for (let y = 0; y < 28; ++y)
      for (let x = 0; x < 28; ++x) {
        if (px[y * 28 + x] < 200 || (x > 0 && px[y * 28 + x - 1] >= 200)) continue;
        let e = x;
        while (e + 1 < 28 && px[y * 28 + e + 1] >= 200) ++e;  // a run of ink: one drag
        const cy = pad.y + (y + 0.5) * s;
        await page.mouse('mousePressed', pad.x + (x + 0.5) * s, cy);
        await page.mouse('mouseMoved', pad.x + (e + 0.5) * s, cy);
        await page.mouse('mouseReleased', pad.x + (e + 0.5) * s, cy);
      }
    return page.evaluate('demo.settled()');
  };
  // A traced digit is drawn with the page's round pen, thicker than the original strokes: most,
  // not all, keep their class (7 of 8 or more).
  let drawn = 0, right = 0;
  for (let i = 0; i < 40 && drawn < 8; ++i) {
    if (nativeClass(i) !== labels[i]) continue;
    const r = await draw(i);
    right += r?.label === labels[i];
    report(`drawn test digit ${i} (a ${labels[i]})`, `page says ${r?.label} (p=${r ? r.probabilities[r.label].toFixed(3) : '-'})`);
    ++drawn;
  }
  check('drawn digits (traced from test digits native gets right) are classified as drawn',
        drawn === 8 && right >= 7, `${right} of ${drawn}`);

  // (g) the screenshot, with a drawn digit.
  await draw(0);
  const shot = join(outDir, 'web-mnist.png');
  mkdirSync(outDir, {recursive: true});
  await page.screenshot(shot, {width: 860, height: 540});
  check('screenshot written', statSync(shot).size > 10000, shot);

  // (e) Fashion-MNIST: every shown image classified, the answer and the true label displayed.
  const fashion = await open('fashion.html?backend=wasm');
  const f = await fashion.evaluate(`(async () => {
    let right = 0, n = document.querySelectorAll('#grid canvas').length;
    for (let i = 0; i < n; ++i) {
      const r = await demo.choose(i);
      right += r.label === r.truth;
    }
    const r = await demo.choose(1);
    return {n, right, r, answer: document.getElementById('answer').textContent,
            truth: document.querySelector('.bar.truth .name')?.textContent,
            stats: document.getElementById('stats').textContent};
  })()`);
  const names = ['T-shirt/top', 'Trouser', 'Pullover', 'Dress', 'Coat', 'Sandal', 'Shirt', 'Sneaker', 'Bag', 'Ankle boot'];
  check('fashion: the grid shows 48 images', f.n === 48, `${f.n}`);
  check('fashion: the answer shown is the predicted class', f.answer === names[f.r.label], `${f.answer}`);
  check('fashion: the true label is marked', f.truth === names[f.r.truth] && f.stats.includes(names[f.r.truth]), `${f.truth}`);
  check('fashion: most shown images are classified right', f.right > f.n / 2, `${f.right} / ${f.n}`);

  // A checkpoint (ember.checkpoint.v1) of an mlp, loaded from bytes: the same figure as native.
  execFileSync(ember, ['train', 'mnist', '--model', 'mlp', '--epochs', '1', '--limit-train', '512',
                       '--limit-test', '64', '--data', join(root, 'data/mnist'), '--out', join(tmp, 'mlp')]);
  const ckDir = join(tmp, 'mlp/checkpoints');
  const ck = join(ckDir, execFileSync('ls', [ckDir], {encoding: 'utf8'}).split('\n')[0]);
  const ckEval = execFileSync(ember, ['eval', '--checkpoint', ck, '--data', join(root, 'data/mnist')], {encoding: 'utf8'});
  const ckCorrect = Math.round(Number(/test accuracy: ([\d.]+)%/.exec(ckEval)[1]) * labels.length / 100);
  const c = await page.evaluate(`(async () => {
    const bytes = Uint8Array.from(atob('${readFileSync(ck).toString('base64')}'), (ch) => ch.charCodeAt(0));
    const m = await demo.ember.loadModel(bytes);
    const px = new Uint8Array(await (await fetch('assets/mnist-test-images.u8')).arrayBuffer());
    const r = await m.predict(px);
    const info = {name: m.name, inputShape: m.inputShape, classes: m.classes, format: m.metadata.format};
    m.dispose();
    return {info, classes: Array.from(r.classes)};
  })()`);
  const cRight = c.classes.filter((k, i) => k === labels[i]).length;
  check('a checkpoint of an mlp loads', c.info.name === 'mlp' && c.info.classes === 10 &&
        c.info.inputShape.join() === '1,28,28' && c.info.format === 'ember.checkpoint.v1', JSON.stringify(c.info));
  check('the checkpoint scores as native', cRight === ckCorrect, `${cRight} correct (native ${ckCorrect})`);

  // (f) files that are not models: a visible error, not a blank page.
  const good = readFileSync(modelFile);
  const cases = {
    'a truncated model': good.subarray(0, good.length >> 1),
    'random bytes': Buffer.from(Array.from({length: 4096}, (_, i) => (i * 2654435761) >>> 24)),
    'safetensors of another model': (() => {
      const h = Buffer.from(JSON.stringify({w: {dtype: 'F32', shape: [1], data_offsets: [0, 4]}}).padEnd(40));
      const n = Buffer.alloc(8);
      n.writeBigUInt64LE(BigInt(h.length));
      return Buffer.concat([n, h, Buffer.alloc(4)]);
    })(),
  };
  for (const [what, bytes] of Object.entries(cases)) {
    writeFileSync(corrupt, bytes);
    const p = await browser.newPage(server.url + 'index.html?backend=wasm&model=assets/corrupt-test.safetensors');
    const s = await p.evaluate(`(async () => {
      await demo.ready.catch(() => {});
      const st = document.getElementById('status');
      return {error: st.classList.contains('error'), text: st.textContent,
              pad: document.getElementById('pad').getBoundingClientRect().width};
    })()`);
    check(`${what}: the page shows an error`, s.error && s.text.startsWith('Error: ') && s.pad > 0, s.text);
  }
  const missing = await browser.newPage(server.url + 'index.html?backend=wasm&model=assets/nothing.safetensors');
  const m = await missing.evaluate('demo.ready.catch(() => {}).then(() => document.getElementById("status").textContent)');
  check('a missing model: the page shows an error', /HTTP 404/.test(m), m);

  // The API's argument checks (web/ember.mjs): clear Errors naming the argument, tensors kept to
  // their instance, the real thread count in `info`, own-property dataset lookups.
  const withDataset = (name) => {  // the digits model, its metadata's dataset renamed
    const n = Number(good.readBigUInt64LE(0));
    const h = JSON.parse(good.subarray(8, 8 + n).toString());
    h.__metadata__['ember.dataset'] = name;
    const hb = Buffer.from(JSON.stringify(h));
    const hp = Buffer.concat([hb, Buffer.alloc((8 - hb.length % 8) % 8, 0x20)]);
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(hp.length));
    return Buffer.concat([len, hp, good.subarray(8 + n)]).toString('base64');
  };
  const api = await page.evaluate(`(async () => {
    const {Ember} = await import('./ember.mjs');
    const err = async (f) => { try { await f(); return 'no error'; } catch (e) { return e.constructor.name + ': ' + e.message; } };
    const e = demo.ember, m = demo.model, px = new Float32Array(784);
    const out = {cores: navigator.hardwareConcurrency, info: e.info};
    const other = await Ember.create({backend: 'wasm', threads: 1});
    out.otherInfo = other.info;
    const t = other.tensor(px, [1, 1, 28, 28]);
    out.mixed = await err(() => m.predict(t));
    other.dispose();
    out.disposed = await err(() => t.data());
    const two = await Ember.create({backend: 'wasm', threads: 2});
    out.twoInfo = two.info;
    two.dispose();
    out.threads = [];
    for (const th of [0, 2.5, '4', null]) out.threads.push(await err(() => Ember.create({backend: 'wasm', threads: th})));
    out.shapes = [];
    for (const s of [[2.5], [NaN], [Infinity], 'abc', undefined, [1, 1, 1, 1, 1, 1, 1, 1, 1]])
      out.shapes.push(await err(() => e.tensor(new Float32Array(1), s)));
    out.predictNull = await err(() => m.predict(px, null));
    out.predictNoX = await err(() => m.predict(null));
    out.createNull = await err(() => Ember.create(null));
    out.datasets = [];
    for (const b64 of ['${withDataset('__proto__')}', '${withDataset('constructor')}']) {
      const dm = await e.loadModel(Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0)));
      out.datasets.push({dataset: dm.dataset, u8: await err(() => dm.predict(new Uint8Array(784)))});
      dm.dispose();
    }
    const nan = await m.predict(new Float32Array(784).fill(NaN));
    out.nanClass = nan.classes[0];
    return out;
  })()`);
  const want = (n) => `wasm simd128, ${n} thread${n === 1 ? '' : 's'}`;
  check('api: info reports the threads in use (auto)', api.info === want(Math.min(api.cores, 8)), `${api.info} (${api.cores} cores)`);
  check('api: info reports the threads in use (1, 2)', api.otherInfo === want(1) && api.twoInfo === want(Math.min(2, api.cores)),
        `${api.otherInfo}; ${api.twoInfo}`);
  check('api: a tensor of another instance is refused', /^Error: predict: .*belongs to another Ember instance/.test(api.mixed), api.mixed);
  check('api: a disposed instance\'s tensor throws', /^Error: .*Ember instance was disposed/.test(api.disposed), api.disposed);
  check('api: bad threads throw', api.threads.every((m) => /^Error: Ember.create: threads is/.test(m)), api.threads.join(' | '));
  check('api: bad shapes throw', api.shapes.slice(0, 5).every((m) => /^Error: ember.tensor: shape/.test(m)) &&
        /rank 9, which exceeds 8/.test(api.shapes[5]), api.shapes.join(' | '));
  check('api: null arguments throw clear Errors', /^Error: predict: options/.test(api.predictNull) &&
        /^Error: predict: x must be/.test(api.predictNoX) && /^Error: Ember.create: options/.test(api.createNull),
        `${api.predictNull} | ${api.predictNoX} | ${api.createNull}`);
  check('api: datasets __proto__ / constructor are unknown', api.datasets.every((d) => d.dataset === null &&
        /^Error: predict: u8 pixels need/.test(d.u8)), JSON.stringify(api.datasets));
  check('api: an image of NaN has class -1', api.nanClass === -1, `${api.nanClass}`);

  // Download sizes.
  const gz = (files) => files.reduce((n, f) => n + gzipSync(readFileSync(join(demo, f)), {level: 9}).length, 0);
  const code = ['wasm/ember.wasm', 'wasm/ember.mjs', 'ember.mjs', 'webgpu_device.mjs'].filter((f) => existsSync(join(demo, f)));
  report('code download (gzip -9 of ' + code.join(' + ') + ')', `${(gz(code) / 1024).toFixed(0)} KiB`);
  report('weights', `${(statSync(modelFile).size / 1024).toFixed(0)} KiB (gzip -9: ${(gz(['assets/mnist-cnn.safetensors']) / 1024).toFixed(0)} KiB)`);
} catch (e) {
  check('the test ran to the end', false, e.stack);
} finally {
  rmSync(corrupt, {force: true});
  rmSync(tmp, {recursive: true, force: true});
  await browser.close();
  server.close();
}
if (checks === 0) check('checks ran', false);
console.log(`${checks - failures} of ${checks} checks passed`);
process.exit(failures ? 1 : 0);
