// ONNX Runtime's side of bench/onnx_vs_ort.sh: the same folder and batch as bench/onnx_model.cpp
// (inputs read from input_N.npy, tiled to BATCH rows), onnxruntime-node on the CPU:
//   "onnxruntime load+first L ms best B ms median M ms"
//   node bench/onnx_ort.mjs DIR BATCH THREADS ITERS   (NODE_PATH: onnxruntime-node's folder)
import { createRequire } from 'node:module';
import { readNpy } from '../scripts/npy.mjs';

const require = createRequire(import.meta.url);
const ort = require('onnxruntime-node');
const [dir, batch = '0', threads = '2', iters = '10'] = process.argv.slice(2);

function tile(t, rows) {
  if (!rows || t.dims[0] === rows) return t;
  const per = t.data.length / t.dims[0];
  const data = new t.data.constructor(per * rows);
  for (let r = 0; r < rows; ++r) data.set(t.data.subarray((r % t.dims[0]) * per, ((r % t.dims[0]) + 1) * per), r * per);
  return { type: t.type, dims: [rows, ...t.dims.slice(1)], data };
}

const t0 = performance.now();
const s = await ort.InferenceSession.create(`${dir}/model.onnx`, {
  intraOpNumThreads: Number(threads),
  interOpNumThreads: 1,
});
const feeds = {};
for (const name of s.inputNames) {
  const t = tile(readNpy(`${dir}/${name}.npy`), Number(batch));
  feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
}
await s.run(feeds);
const first = performance.now() - t0;
const ts = [];
for (let i = 0; i < Number(iters); ++i) {
  const t = performance.now();
  await s.run(feeds);
  ts.push(performance.now() - t);
}
ts.sort((a, b) => a - b);
console.log(`onnxruntime load+first ${first.toFixed(1)} ms best ${ts[0].toFixed(2)} ms median ${ts[ts.length >> 1].toFixed(2)} ms`);
