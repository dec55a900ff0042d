// NumPy .npy files for the node scripts that feed ONNX Runtime (bench/onnx_ort.mjs,
// tests/onnx_export_ort.mjs): version 1-3 headers, little-endian, C order.
import { readFileSync } from 'node:fs';

const kTypes = {
  '<f4': ['float32', Float32Array],
  '<f8': ['float64', Float64Array],
  '<i4': ['int32', Int32Array],
  '<i8': ['int64', BigInt64Array],
  '|u1': ['uint8', Uint8Array],
};

// The tensor in `path` as {type, dims, data} (data a typed array of the file's dtype).
export function readNpy(path) {
  const b = readFileSync(path);
  if (b.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(`${path}: not a .npy file`);
  const major = b[6];
  const len = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = b.toString('latin1', start, start + len);
  const descr = /'descr': '([^']*)'/.exec(header)[1];
  if (/'fortran_order': True/.test(header)) throw new Error(`${path}: Fortran order`);
  const dims = /'shape': \(([^)]*)\)/.exec(header)[1].split(',').filter((s) => s.trim()).map(Number);
  const t = kTypes[descr];
  if (!t) throw new Error(`${path}: dtype ${descr}`);
  const bytes = b.subarray(start + len);
  const buf = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length);
  return { type: t[0], dims, data: new t[1](buf) };
}
