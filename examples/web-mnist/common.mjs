// What both demo pages share: starting Ember on the chosen backend, loading the model, the
// backend switch, the status line and the probability bars.
import {Ember} from './ember.mjs';

const params = new URLSearchParams(location.search);
const status = document.getElementById('status');

/** Shows a message in the status line (red for errors). */
export function setStatus(text, error = false) {
  status.textContent = text;
  status.classList.toggle('error', error);
}

/** Reports an error on the page (never a blank page) and in the console. */
export function showError(e) {
  console.error(e);
  setStatus(`Error: ${e?.message ?? e}`, true);
}

/**
 * Starts Ember and loads the model (URL ?model= overrides `modelUrl`), again when the backend
 * switch changes. onReady({ember, model}) runs after each start; the returned object holds the
 * current ember/model (for tests) and `ready`, a promise of the first start.
 */
export function startDemo(modelUrl, onReady) {
  const state = {ember: null, model: null, ready: null, backend: params.get('backend') ?? 'auto'};
  const radios = document.querySelectorAll('input[name=backend]');
  const webgpu = document.getElementById('use-webgpu');
  let noGpu = 'gpu' in navigator ? '' : 'this browser has no WebGPU (navigator.gpu)';
  // Marks the WebGPU option unavailable (disabled, the reason as its tooltip).
  const markNoGpu = (why) => {
    noGpu = why;
    webgpu.closest('label').title = `WebGPU unavailable: ${why}`;
  };
  if (noGpu) markNoGpu(noGpu);
  async function start(backend) {
    for (const r of radios) r.disabled = true;
    setStatus(`loading Ember (${backend})...`);
    try {
      // The previous instance goes first: its model, its WebGPU device, its module.
      state.model?.dispose();
      state.ember?.dispose();
      state.model = state.ember = null;
      const t0 = performance.now();
      const bytes = fetch(params.get('model') ?? modelUrl).then((r) => {
        if (!r.ok) throw new Error(`cannot fetch the model ${r.url}: HTTP ${r.status}`);
        return r.arrayBuffer();
      });
      bytes.catch(() => {});  // awaited below; no unhandled rejection while Ember starts
      let ember;
      if (backend === 'webgpu' && noGpu) backend = 'wasm';
      try {
        ember = await Ember.create({backend});
      } catch (e) {
        if (backend !== 'webgpu' || !/WebGPU/.test(e.message)) throw e;
        markNoGpu(e.message.replace(/^Ember.create: /, ''));  // no adapter or device: use wasm
        ember = await Ember.create({backend: 'wasm'});
      }
      if (backend === 'auto' && ember.backend === 'wasm' && !noGpu) markNoGpu('the browser gives no WebGPU device');
      state.ember = ember;
      state.model = await ember.loadModel(await bytes);
      for (const r of radios) r.checked = r.value === ember.backend;
      await onReady(state);
      const m = state.model;
      setStatus(`${m.name} trained on ${m.metadata.dataset ?? '?'} · ${ember.backend}: ${ember.info} · ` +
                `ready in ${(performance.now() - t0).toFixed(0)} ms${noGpu ? ` · WebGPU unavailable: ${noGpu}` : ''}`);
    } catch (e) {
      showError(e);
      throw e;
    } finally {
      for (const r of radios) r.disabled = r === webgpu && !!noGpu;
    }
  }
  // state.ready rejects when a start fails (the page shows the error); the no-op catch keeps
  // that out of the console as an unhandled rejection.
  const begin = (backend) => {
    state.ready = start(backend);
    state.ready.catch(() => {});
  };
  for (const r of radios) r.addEventListener('change', () => begin(r.value));
  begin(state.backend);
  return state;
}

/** Fills `el` with one bar per class: probs (Float32Array) of names, best highlighted. */
export function renderBars(el, names, probs, truth = -1) {
  if (el.children.length !== names.length) {
    el.innerHTML = '';
    for (const n of names) {
      const row = document.createElement('div');
      row.className = 'bar';
      row.innerHTML = '<span class="name"></span><span class="track"><span class="fill"></span></span><span class="pct"></span>';
      row.querySelector('.name').textContent = n;
      el.appendChild(row);
    }
  }
  let best = -1;
  if (probs) for (let i = 0; i < probs.length; ++i) if (best < 0 || probs[i] > probs[best]) best = i;
  names.forEach((_, i) => {
    const row = el.children[i], p = probs ? probs[i] : 0;
    row.classList.toggle('best', i === best);
    row.classList.toggle('truth', i === truth);
    row.querySelector('.fill').style.width = `${(100 * p).toFixed(1)}%`;
    row.querySelector('.pct').textContent = probs ? `${(100 * p).toFixed(1)}%` : '';
  });
  return best;
}

/** The stats line: which backend ran and how long. */
export function statsText(state, ms) {
  return `${state.ember.backend} · ${ms.toFixed(1)} ms per inference`;
}
