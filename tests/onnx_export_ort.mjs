// ONNX Runtime's side of ctest onnx/export_ort (tests/onnx_export_ort.sh): every NAME.onnx in DIR
// that has NAME.input.npy and NAME.output.npy runs in onnxruntime-node (CPU) on the input, and its
// output must match: |ort - want| <= 1e-4 + 1e-4 |want|. Exits 1 on a mismatch, on an error, or
// when DIR holds no such model.
//   node tests/onnx_export_ort.mjs DIR   (NODE_PATH: onnxruntime-node's node_modules)
import { createRequire } from 'node:module';
import { readdirSync, existsSync } from 'node:fs';
import { readNpy } from '../scripts/npy.mjs';

const require = createRequire(import.meta.url);
const ort = require('onnxruntime-node');
const dir = process.argv[2];
let checked = 0;
let failed = 0;
for (const f of readdirSync(dir).filter((f) => f.endsWith('.onnx')).sort()) {
  const name = f.slice(0, -5);
  if (!existsSync(`${dir}/${name}.input.npy`) || !existsSync(`${dir}/${name}.output.npy`)) continue;
  const x = readNpy(`${dir}/${name}.input.npy`);
  const want = readNpy(`${dir}/${name}.output.npy`);
  try {
    const s = await ort.InferenceSession.create(`${dir}/${f}`, { intraOpNumThreads: 1 });
    const out = await s.run({ [s.inputNames[0]]: new ort.Tensor(x.type, x.data, x.dims) });
    const got = out[s.outputNames[0]];
    let worst = 0;
    let bad = -1;
    if (got.dims.join(',') !== want.dims.join(',')) {
      console.log(`${name}: onnxruntime gave shape [${got.dims}], the module [${want.dims}]`);
      ++failed;
    } else {
      for (let i = 0; i < want.data.length; ++i) {
        const d = Math.abs(got.data[i] - want.data[i]);
        worst = Math.max(worst, d);
        if (!(d <= 1e-4 + 1e-4 * Math.abs(want.data[i])) && bad < 0) bad = i;
      }
      if (bad >= 0) {
        console.log(`${name}: element ${bad} is ${got.data[bad]} in onnxruntime, ${want.data[bad]} in Ember`);
        ++failed;
      } else {
        console.log(`${name}: onnxruntime matches Ember (shape [${want.dims}], max |diff| ${worst.toExponential(2)})`);
      }
    }
  } catch (e) {
    console.log(`${name}: onnxruntime failed: ${e.message}`);
    ++failed;
  }
  ++checked;
}
console.log(`${checked} exported models run in onnxruntime ${ort.env.versions.common}, ${failed} failed`);
process.exit(checked === 0 || failed > 0 ? 1 : 0);
