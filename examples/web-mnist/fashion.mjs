// The Fashion-MNIST page: a grid of test images; a click classifies one.
import {DATASETS} from './ember.mjs';
import {renderBars, showError, startDemo, statsText} from './common.mjs';

const names = DATASETS['fashion-mnist'].classNames;
const grid = document.getElementById('grid');
const bars = document.getElementById('bars');
const answer = document.getElementById('answer');
const stats = document.getElementById('stats');

async function fetchBytes(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`cannot fetch ${url}: HTTP ${r.status} (run scripts/web-demo.sh)`);
  return new Uint8Array(await r.arrayBuffer());
}

const [images, labels] = await Promise.all([fetchBytes('assets/fashion-test-images.u8'),
                                            fetchBytes('assets/fashion-test-labels.u8')])
                             .catch((e) => { showError(e); return [new Uint8Array(0), []]; });

async function choose(i) {
  for (const c of grid.children) c.classList.toggle('chosen', c === grid.children[i]);
  const r = await state.model.predict(images.subarray(784 * i, 784 * (i + 1)));
  const best = renderBars(bars, names, r.probabilities, labels[i]);
  answer.textContent = names[best];
  stats.textContent = `${statsText(state, r.ms)} · true label: ${names[labels[i]]}`;
  state.last = {index: i, label: best, truth: labels[i], ms: r.ms};
  return state.last;
}

for (let i = 0; i < labels.length; ++i) {
  const c = document.createElement('canvas');
  c.width = c.height = 28;
  c.title = `test image ${i}: ${names[labels[i]]}`;
  const img = c.getContext('2d').createImageData(28, 28);
  for (let j = 0; j < 784; ++j) img.data.set([255 - images[784 * i + j], 255 - images[784 * i + j],
                                              255 - images[784 * i + j], 255], 4 * j);
  c.getContext('2d').putImageData(img, 0, 0);
  c.addEventListener('click', () => state.ready.then(() => choose(i)).catch(showError));
  grid.appendChild(c);
}

const state = startDemo('assets/fashion-mnist-cnn.safetensors', async () => {
  renderBars(bars, names, null);
  if (labels.length) await choose(state.last?.index ?? 0);
});
/** For tests: classifies grid image i. */
state.choose = choose;
window.demo = state;
