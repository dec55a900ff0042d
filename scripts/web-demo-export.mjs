// Writes the first COUNT images and labels of an IDX pair (plain or .gz, as data/mnist and
// /usr/share/datasets/fashion-mnist hold them) as raw bytes for the web demo:
//   node scripts/web-demo-export.mjs IMAGES_IDX LABELS_IDX COUNT OUT_PREFIX
// -> OUT_PREFIX-images.u8 (u8 [COUNT, 28, 28], row-major) and OUT_PREFIX-labels.u8 (u8 [COUNT]).
import {existsSync, readFileSync, writeFileSync} from 'node:fs';
import {gunzipSync} from 'node:zlib';

function readIdx(path, magic) {
  const file = existsSync(path) ? path : `${path}.gz`;
  let b = readFileSync(file);
  if (b[0] === 0x1f && b[1] === 0x8b) b = gunzipSync(b);
  if (b.readUInt32BE(0) !== magic) throw new Error(`${file}: not an IDX file of magic ${magic}`);
  const n = b.readUInt32BE(4);
  const header = magic === 2051 ? 16 : 8;
  const each = magic === 2051 ? b.readUInt32BE(8) * b.readUInt32BE(12) : 1;
  if (each !== (magic === 2051 ? 784 : 1) || b.length < header + n * each)
    throw new Error(`${file}: expected 28x28 images, got ${each} pixels or a truncated file`);
  return {n, each, bytes: b.subarray(header)};
}

const [imagesPath, labelsPath, countArg, out] = process.argv.slice(2);
if (!out) {
  console.error('usage: node scripts/web-demo-export.mjs IMAGES_IDX LABELS_IDX COUNT OUT_PREFIX');
  process.exit(2);
}
const images = readIdx(imagesPath, 2051), labels = readIdx(labelsPath, 2049);
const count = Math.min(Number(countArg), images.n, labels.n);
writeFileSync(`${out}-images.u8`, images.bytes.subarray(0, count * 784));
writeFileSync(`${out}-labels.u8`, labels.bytes.subarray(0, count));
console.log(`wrote ${count} images and labels to ${out}-images.u8 / -labels.u8`);
