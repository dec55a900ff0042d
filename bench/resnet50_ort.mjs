// ONNX Runtime's side of bench/resnet50_ort.sh: times a ResNet-50 ONNX file (batch 8, 224x224,
// f32) with onnxruntime-node on the CPU and prints "onnxruntime best B ms median M ms".
//   node bench/resnet50_ort.mjs MODEL.onnx THREADS ITERS   (NODE_PATH: onnxruntime-node's folder)
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const ort = require('onnxruntime-node');
const [model, threads = '2', iters = '5'] = process.argv.slice(2);
const s = await ort.InferenceSession.create(model, {
  intraOpNumThreads: Number(threads),
  interOpNumThreads: 1,
});
const dims = [8, 3, 224, 224];
const data = new Float32Array(dims.reduce((a, b) => a * b));
for (let i = 0; i < data.length; ++i) data[i] = Math.sin(i);
const feeds = { [s.inputNames[0]]: new ort.Tensor('float32', data, dims) };
await s.run(feeds);  // warm-up
const ts = [];
for (let i = 0; i < Number(iters); ++i) {
  const t0 = performance.now();
  await s.run(feeds);
  ts.push(performance.now() - t0);
}
ts.sort((a, b) => a - b);
console.log(`onnxruntime best ${ts[0].toFixed(1)} ms median ${ts[ts.length >> 1].toFixed(1)} ms`);
