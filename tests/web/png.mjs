// Writes 8-bit grayscale PNGs (for `ember predict`, which reads PNG or JPEG).
import {writeFileSync} from 'node:fs';
import {deflateSync} from 'node:zlib';

const kCrc = Array.from({length: 256}, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; ++k) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(buf) {
  let c = 0xffffffff;
  for (const b of buf) c = kCrc[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
function chunk(type, data) {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'latin1');
  data.copy(out, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

/// pixels: u8 [height * width], row-major.
export function writePng(path, pixels, width, height) {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8;  // bit depth; colour type 0 (gray), no interlace
  const rows = Buffer.alloc(height * (width + 1));
  for (let y = 0; y < height; ++y)
    Buffer.from(pixels.subarray(y * width, (y + 1) * width)).copy(rows, y * (width + 1) + 1);
  writeFileSync(path, Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]),
                                     chunk('IHDR', ihdr), chunk('IDAT', deflateSync(rows)),
                                     chunk('IEND', Buffer.alloc(0))]));
}
