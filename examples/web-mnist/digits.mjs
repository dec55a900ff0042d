// The digits page: draw on the pad, the model classifies the drawing as MNIST would have it.
import {renderBars, showError, startDemo, statsText} from './common.mjs';

const pad = document.getElementById('pad');
const ctx = pad.getContext('2d', {willReadFrequently: true});
const preview = document.getElementById('preview').getContext('2d');
const bars = document.getElementById('bars');
const answer = document.getElementById('answer');
const stats = document.getElementById('stats');
const names = ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9'];

/**
 * MNIST's preprocessing of a drawing (white on black RGBA, any size): the bounding box of the
 * ink scaled (area average) so its longer side is 20 pixels, placed in 28x28 with its centre of
 * mass at (14, 14). Returns u8 [784] pixels, or null when nothing is drawn.
 */
export function mnistPixels({data, width, height}) {
  let x0 = width, y0 = height, x1 = -1, y1 = -1;
  for (let y = 0; y < height; ++y)
    for (let x = 0; x < width; ++x)
      if (data[4 * (y * width + x)] > 8) {
        x0 = Math.min(x0, x), x1 = Math.max(x1, x), y0 = Math.min(y0, y), y1 = Math.max(y1, y);
      }
  if (x1 < 0) return null;
  const bw = x1 - x0 + 1, bh = y1 - y0 + 1, s = 20 / Math.max(bw, bh);
  const w = Math.max(1, Math.round(bw * s)), h = Math.max(1, Math.round(bh * s));
  const kx = areaWeights(x0, bw, w), ky = areaWeights(y0, bh, h);
  const patch = new Float32Array(w * h);
  let mass = 0, mx = 0, my = 0;
  for (let ty = 0; ty < h; ++ty)
    for (let tx = 0; tx < w; ++tx) {
      let v = 0;
      for (const [sy, wy] of ky[ty])
        for (const [sx, wx] of kx[tx]) v += wy * wx * data[4 * (sy * width + sx)];
      patch[ty * w + tx] = v;
      mass += v, mx += v * tx, my += v * ty;
    }
  const ox = Math.round(14 - mx / mass), oy = Math.round(14 - my / mass);
  const out = new Uint8Array(784);
  for (let ty = 0; ty < h; ++ty)
    for (let tx = 0; tx < w; ++tx) {
      const x = tx + ox, y = ty + oy;
      if (x >= 0 && x < 28 && y >= 0 && y < 28) out[y * 28 + x] = Math.min(255, Math.round(patch[ty * w + tx]));
    }
  return out;
}

// For each of n output pixels over source [start, start + len): [index, weight] of the source
// pixels it covers, weights summing to 1 (box filter with fractional edges).
function areaWeights(start, len, n) {
  const k = len / n, out = [];
  for (let i = 0; i < n; ++i) {
    const a = i * k, b = (i + 1) * k, taps = [];
    for (let j = Math.floor(a); j < Math.ceil(b); ++j) {
      const cover = Math.min(b, j + 1) - Math.max(a, j);
      if (cover > 0) taps.push([start + j, cover / k]);
    }
    out.push(taps);
  }
  return out;
}

// ---- drawing ----
function clearPad() {
  ctx.fillStyle = '#000';
  ctx.fillRect(0, 0, pad.width, pad.height);
}
clearPad();
let last = null;
function point(e) {
  const r = pad.getBoundingClientRect();
  return [(e.clientX - r.left) * pad.width / r.width, (e.clientY - r.top) * pad.height / r.height];
}
function strokeTo(p) {
  ctx.strokeStyle = '#fff';
  ctx.lineWidth = pad.width / 12;
  ctx.lineCap = ctx.lineJoin = 'round';
  ctx.beginPath();
  ctx.moveTo(...(last ?? p));
  ctx.lineTo(...p);
  ctx.stroke();
  last = p;
}
pad.addEventListener('pointerdown', (e) => {
  pad.setPointerCapture(e.pointerId);
  last = null;
  strokeTo(point(e));
  schedule();
});
pad.addEventListener('pointermove', (e) => {
  if (!pad.hasPointerCapture(e.pointerId)) return;
  for (const c of e.getCoalescedEvents?.() ?? [e]) strokeTo(point(c));
  schedule();
});
const end = () => { last = null; schedule(); };
pad.addEventListener('pointerup', end);
pad.addEventListener('pointercancel', end);
document.getElementById('clear').addEventListener('click', () => {
  clearPad();
  schedule();
});

// ---- classifying, at most once per frame ----
let frame = 0, running = Promise.resolve(), idle = true;
function schedule() {
  if (frame || !state.model) return;
  idle = false;
  frame = requestAnimationFrame(() => {
    frame = 0;
    running = running.then(classify).catch(showError).finally(() => { idle = !frame; });
  });
}

async function classify() {
  const px = mnistPixels(ctx.getImageData(0, 0, pad.width, pad.height));
  const img = preview.createImageData(28, 28);
  for (let i = 0; i < 784; ++i) {
    img.data.set([px?.[i] ?? 0, px?.[i] ?? 0, px?.[i] ?? 0, 255], 4 * i);
  }
  preview.putImageData(img, 0, 0);
  if (!px) {
    renderBars(bars, names, null);
    answer.textContent = '';
    stats.textContent = 'draw a digit';
    state.last = null;
    return;
  }
  const r = await state.model.predict(px);
  const best = renderBars(bars, names, r.probabilities);
  answer.textContent = names[best];
  stats.textContent = statsText(state, r.ms);
  state.last = {label: best, probabilities: Array.from(r.probabilities), ms: r.ms, pixels: Array.from(px)};
}

const state = startDemo('assets/mnist-cnn.safetensors', async (s) => {
  // A first (blank) prediction warms the device up; it marks the cold start's end.
  const r = await s.model.predict(new Uint8Array(784));
  if (!s.firstPrediction) s.firstPrediction = {at: performance.now(), ms: r.ms};
  renderBars(bars, names, null);
  schedule();
});
/** For tests: resolves when no classification is pending, with the latest result. */
state.settled = async () => {
  await state.ready;
  while (!idle) await new Promise((ok) => setTimeout(ok, 5)).then(() => running);
  return state.last;
};
state.clear = () => { clearPad(); schedule(); };
window.demo = state;
