// The page side of bench/web_inference.mjs: served beside ember/ (the demo folder), ort/
// (onnxruntime-web's dist/) and model.onnx; ?lib=ember|ort&backend=wasm|webgpu&threads=N.
// window.bench resolves to the cold start (navigation to first prediction, ms from the page's
// timeOrigin), the per-digit times at batch 1 and 256, the classes of the first 500 test digits,
// the logits of the first 256 and the code files the page loaded.
const q = new URLSearchParams(location.search);
const lib = q.get('lib'), backend = q.get('backend'), threads = Number(q.get('threads') ?? 1);
const reps = Number(q.get('reps') ?? 200);
const mean = 0.1307, std = 0.3081;  // MNIST's, as `ember export` records in the file

async function bytes(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`cannot fetch ${url}: HTTP ${r.status}`);
  return new Uint8Array(await r.arrayBuffer());
}

// Returns run(u8 pixels of n digits) -> {logits: Float32Array [n * 10], classes}.
async function startEmber() {
  const {Ember} = await import('./ember/ember.mjs');
  const [ember, weights] = await Promise.all([Ember.create({backend, threads}),
                                              bytes('ember/assets/mnist-cnn.safetensors')]);
  if (ember.backend !== backend) throw new Error(`Ember runs on ${ember.backend}, not ${backend}`);
  const model = await ember.loadModel(weights);
  const run = async (px) => {
    const r = await model.predict(px, {softmax: false});
    return {logits: r.probabilities, classes: Array.from(r.classes)};
  };
  return {run, info: ember.info};
}

async function startOrt() {
  const ort = await import(backend === 'webgpu' ? './ort/ort.webgpu.min.mjs' : './ort/ort.wasm.min.mjs');
  ort.env.wasm.numThreads = threads;
  ort.env.wasm.proxy = false;
  const model = await bytes('model.onnx');
  const session = await ort.InferenceSession.create(model, {executionProviders: [backend],
                                                             graphOptimizationLevel: 'all'});
  const run = async (px) => {
    const n = px.length / 784, x = new Float32Array(px.length);
    for (let i = 0; i < px.length; ++i) x[i] = (px[i] / 255 - mean) / std;
    const out = await session.run({[session.inputNames[0]]: new ort.Tensor('float32', x, [n, 1, 28, 28])});
    const logits = await out[session.outputNames[0]].getData();
    const classes = [];
    for (let i = 0; i < n; ++i) {
      let best = 0;
      for (let k = 1; k < 10; ++k) if (logits[10 * i + k] > logits[10 * i + best]) best = k;
      classes.push(best);
    }
    return {logits, classes};
  };
  return {run, info: `onnxruntime-web ${ort.env.versions?.web ?? '?'} ${backend}, ${threads} thread(s)`};
}

const median = (a) => a.sort((x, y) => x - y)[a.length >> 1];

async function bench() {
  const [{run, info}, px] = await Promise.all([lib === 'ember' ? startEmber() : startOrt(),
                                               bytes('ember/assets/mnist-test-images.u8')]);
  await run(px.subarray(0, 784));
  const cold = performance.now();  // timeOrigin: the navigation's start
  const digits = px.length / 784;
  const classes = [];
  // the first 500 digits (the 2,000 take minutes on SwiftShader)
  for (let i = 0; i < 500; i += 250) classes.push(...(await run(px.subarray(784 * i, 784 * (i + 250)))).classes);
  const batch256 = px.subarray(0, 784 * 256);
  const logits = Array.from((await run(batch256)).logits);
  const time = async (n, f) => {
    const ms = [];
    for (let i = 0; i < n; ++i) {
      const t = performance.now();
      await f(i);
      ms.push(performance.now() - t);
    }
    return median(ms);
  };
  await time(20, (i) => run(px.subarray(784 * i, 784 * (i + 1))));  // warm-up
  const b1 = await time(reps, (i) => run(px.subarray(784 * (i % digits), 784 * (i % digits + 1))));
  await run(batch256);
  const b256 = await time(backend === 'webgpu' ? 3 : Math.max(5, Math.round(reps / 20)), () => run(batch256)) / 256;
  const code = performance.getEntriesByType('resource').map((e) => new URL(e.name).pathname)
                 .filter((p) => /\.(m?js|wasm)$/.test(p) && !p.endsWith('/page.mjs'));
  return {info, cold, b1, b256, classes, logits, code, isolated: crossOriginIsolated};
}

window.bench = lib === 'none' ? null : bench();  // none: the warm-up page
