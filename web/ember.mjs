// Ember in the browser: run models trained by `ember train` on WebGPU or on the CPU (WebAssembly
// SIMD, threads when the page is cross-origin isolated). See docs/web.md.
//
//   import {Ember} from './ember.mjs';
//   const ember = await Ember.create({backend: 'auto'});
//   const model = await ember.loadModel('model.safetensors');
//   const {probabilities, classes, ms} = await model.predict(pixelsU8);  // u8 [N*28*28]
//
// The compiled modules (ember.mjs + ember.wasm, ember-threads.mjs + .wasm + .worker.js, from
// scripts/build-wasm.sh) are loaded from `baseUrl`, by default the folder wasm/ beside this file.

/// Normalization and class names of the datasets `ember train` knows (as tools/models.cpp's
/// dataset_spec): u8 pixels p become (p / 255 - mean) / std.
export const DATASETS = {
  'mnist': {mean: 0.1307, std: 0.3081, classNames: ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9']},
  'fashion-mnist': {
    mean: 0.2860,
    std: 0.3530,
    classNames: ['T-shirt/top', 'Trouser', 'Pullover', 'Dress', 'Coat', 'Sandal', 'Shirt',
                 'Sneaker', 'Bag', 'Ankle boot'],
  },
};

// The C side's dtype codes (src/web/api.cpp) and their arrays.
const kDTypes = [
  {name: 'float32', Array: Float32Array},
  {name: 'int32', Array: Int32Array},
  {name: 'uint8', Array: Uint8Array},
  {name: 'int64', Array: BigInt64Array},
];

/// The most sizes a shape may have (src/web/api.cpp's ember_tensor_new and ember_tensor_shape).
export const MAX_RANK = 8;

// What a value is, for error messages: 'null', 'undefined', 'an Array', 'the number 3'...
function describe(v) {
  if (v === null || v === undefined) return String(v);
  if (typeof v !== 'object') return `the ${typeof v} ${String(v)}`;
  return `a ${v.constructor?.name ?? 'object'}`;
}

function dtypeCode(data) {
  const i = kDTypes.findIndex((d) => data instanceof d.Array);
  if (i < 0) throw new Error(`ember.tensor: data must be a Float32Array, Int32Array, Uint8Array or BigInt64Array, got ${describe(data)}`);
  return i;
}

// Throws unless shape is an array of at most MAX_RANK integer sizes 0..2^31-1.
function checkShape(shape, what) {
  if (!Array.isArray(shape)) throw new Error(`${what}: shape must be an array of sizes, got ${describe(shape)}`);
  if (shape.length > MAX_RANK)
    throw new Error(`${what}: shape [${shape}] has rank ${shape.length}, which exceeds ${MAX_RANK} (the most Ember tensors have in JavaScript)`);
  shape.forEach((d, i) => {
    if (!Number.isInteger(d) || d < 0 || d > 0x7fffffff)
      throw new Error(`${what}: shape[${i}] is ${typeof d === 'number' ? d : describe(d)}, not an integer size 0..2^31-1`);
  });
}

// Throws unless obj (a Tensor or Model) was made by ember.
function checkOwner(obj, ember, what) {
  if (obj._ember !== ember)
    throw new Error(`${what}: the ${obj instanceof Tensor ? 'tensor' : 'model'} belongs to another Ember instance; make it with this instance's ember.tensor() / loadModel()`);
}

/** The Ember runtime: one compiled module on one device. Make it with Ember.create(). */
export class Ember {
  /**
   * Loads the WebAssembly module and picks the device.
   * @param {object} [options]
   * @param {'auto'|'webgpu'|'wasm'} [options.backend='auto'] auto: WebGPU when the browser gives
   *   a device (web/webgpu_device.mjs's openWebGPU), else wasm. 'webgpu' throws when it cannot.
   * @param {'auto'|number} [options.threads='auto'] CPU threads for wasm: 'auto' uses the
   *   threaded module with navigator.hardwareConcurrency threads (the kernels use at most 8)
   *   when the page is cross-origin isolated (COOP/COEP headers), else one; an integer n >= 1
   *   asks for n, capped by navigator.hardwareConcurrency (the module's worker pool) and 8; one
   *   without isolation or on WebGPU. `info` says how many the kernels really use.
   * @param {string|URL} [options.baseUrl] the folder holding the compiled modules.
   * @returns {Promise<Ember>}
   * @throws {Error} for bad options, when the module cannot be loaded, or when backend 'webgpu'
   *   is unavailable.
   */
  static async create(options = {}) {
    if (options === null || typeof options !== 'object')
      throw new Error(`Ember.create: options must be an object like {backend: 'auto'}, got ${describe(options)}`);
    const {backend = 'auto', threads = 'auto', baseUrl} = options;
    if (!['auto', 'webgpu', 'wasm'].includes(backend))
      throw new Error(`Ember.create: backend '${backend}' is not 'auto', 'webgpu' or 'wasm'`);
    if (threads !== 'auto' && !(Number.isInteger(threads) && threads >= 1))
      throw new Error(`Ember.create: threads is ${typeof threads === 'number' ? threads : describe(threads)}, not 'auto' or an integer >= 1`);
    const base = new URL(baseUrl ?? './wasm/', import.meta.url);
    let gpu = null;
    if (backend !== 'wasm') {
      try {
        const {openWebGPU} = await import('./webgpu_device.mjs');
        gpu = await openWebGPU();
      } catch (e) {
        if (backend === 'webgpu') throw new Error(`Ember.create: WebGPU: ${e.message}`);
      }
      if (!gpu && backend === 'webgpu')
        throw new Error('Ember.create: this browser gives no WebGPU device (navigator.gpu)');
    }
    const cores = globalThis.navigator?.hardwareConcurrency ?? 1;
    const isolated = globalThis.crossOriginIsolated === true;
    // The threaded module's worker pool is PTHREAD_POOL_SIZE = navigator.hardwareConcurrency:
    // more threads would wait for workers the blocked main thread cannot start.
    const want = Math.min(threads === 'auto' ? cores : threads, cores);
    let threaded = !gpu && isolated && want > 1;
    let url = new URL(threaded ? 'ember-threads.mjs' : 'ember.mjs', base);
    const load = async (u) => {
      try {
        return (await import(u.href)).default;
      } catch (e) {
        throw new Error(`Ember.create: cannot load ${u.href} (${e.message}); build it with scripts/build-wasm.sh`);
      }
    };
    let factory;
    try {
      factory = await load(url);
    } catch (e) {
      if (!threaded || threads !== 'auto') throw e;
      // 'auto' settles for one thread when the threaded module was not built.
      console.warn(`${e.message}; using one thread`);
      threaded = false;
      url = new URL('ember.mjs', base);
      factory = await load(url);
    }
    const opts = {locateFile: (p) => new URL(p, base).href, mainScriptUrlOrBlob: url.href};
    if (gpu) opts.emberWebGPU = gpu;
    const M = await factory(opts);
    const ember = new Ember(M);
    ember._gpu = gpu;
    const onGpu = ember._call(M._ember_init(gpu ? 1 : 0));
    ember.backend = onGpu === 1 ? 'webgpu' : 'wasm';
    if (onGpu === 1) {
      ember.info = describeAdapter(gpu);
    } else {
      const n = ember._call(M._ember_set_num_threads(threaded ? want : 1));
      ember.info = `wasm simd128, ${n} thread${n === 1 ? '' : 's'}`;
    }
    return ember;
  }

  /** @private use Ember.create */
  constructor(module) {
    /** The emscripten module (for tests). */
    this.module = module;
    /** @type {'webgpu'|'wasm'} where tensors live and models run. */
    this.backend = 'wasm';
    /** @type {string} the adapter's description, or 'wasm simd128, N threads' (N in use). */
    this.info = '';
    this._gpu = null;
  }

  /**
   * Frees the instance: destroys its WebGPU device (if any), stops the threaded module's workers
   * and drops the module (its tensors and models with it). Later use of the instance, its
   * tensors or its models throws; calling it again does nothing.
   */
  dispose() {
    if (!this.module) return;
    this._gpu?.device?.destroy();
    this.module.PThread?.terminateAllThreads?.();
    this.module = null;
    this._gpu = null;
  }

  // The module, or a clear error once disposed.
  _module() {
    if (!this.module) throw new Error('ember: the Ember instance was disposed');
    return this.module;
  }

  // Throws the C side's last error when ret signals a failure (0 handle or -1).
  _call(ret, failure = -1) {
    if (ret === failure) throw new Error(this.module.UTF8ToString(this.module._ember_last_error()));
    return ret;
  }

  // Copies bytes into wasm memory for f(ptr); frees them after.
  _withBytes(bytes, f) {
    const M = this.module;
    const p = M._ember_alloc(bytes.byteLength);
    try {
      M.HEAPU8.set(bytes, p);
      return f(p);
    } finally {
      M._ember_dealloc(p);
    }
  }

  /**
   * Copies host data to the device as a tensor.
   * @param {Float32Array|Int32Array|Uint8Array|BigInt64Array} data row-major values
   * @param {number[]} shape integer sizes whose product is data.length (at most MAX_RANK)
   * @returns {Tensor}
   * @throws {Error} for another array type, a shape that is not such an array or does not
   *   match, BigInt64Array on WebGPU, or a disposed instance.
   */
  tensor(data, shape) {
    this._module();
    const code = dtypeCode(data);
    checkShape(shape, 'ember.tensor');
    const numel = shape.reduce((a, b) => a * b, 1);
    if (numel !== data.length)
      throw new Error(`ember.tensor: shape [${shape}] holds ${numel} values, the data ${data.length}`);
    if (kDTypes[code].name === 'int64' && this.backend === 'webgpu')
      throw new Error('ember.tensor: int64 tensors (BigInt64Array) are not available on WebGPU: WGSL has no 64-bit integers; use an Int32Array or the wasm backend');
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    const h = this._withBytes(bytes, (p) => this._withBytes(new Uint8Array(Int32Array.from(shape).buffer),
        (s) => this.module._ember_tensor_new(p, code, s, shape.length)));
    return new Tensor(this, this._call(h, 0));
  }

  /**
   * Loads a model trained by `ember train`: its model.safetensors, or a checkpoint (format
   * ember.checkpoint.v1), as a URL to fetch or the file's bytes.
   * @param {string|URL|ArrayBuffer|ArrayBufferView} source
   * @returns {Promise<Model>}
   * @throws {Error} when the fetch fails or the file is not such a model (corrupt, another
   *   model, weights of other shapes), with the reason.
   */
  async loadModel(source) {
    this._module();
    let bytes = source;
    if (typeof source === 'string' || source instanceof URL) {
      const r = await fetch(source);
      if (!r.ok) throw new Error(`loadModel: cannot fetch ${source}: HTTP ${r.status}`);
      bytes = await r.arrayBuffer();
    }
    if (bytes instanceof ArrayBuffer) bytes = new Uint8Array(bytes);
    else if (ArrayBuffer.isView(bytes)) bytes = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    else throw new Error('loadModel: expected a URL, an ArrayBuffer or a typed array');
    const h = this._call(this._withBytes(bytes, (p) => this._module()._ember_model_load(p, bytes.byteLength)), 0);
    return new Model(this, h);
  }

  // The values of tensor handle h as a new typed array (awaits WebGPU's copy to the host).
  async _read(h) {
    const M = this.module;
    if (this._call(M._ember_tensor_request_read(h)) === 1) await M.emberWebGPU.settle();
    const {Array: A} = kDTypes[this._call(M._ember_tensor_dtype(h))];
    const shape = this._shape(h);
    const n = shape.reduce((a, b) => a * b, 1);
    const bytes = n * A.BYTES_PER_ELEMENT;
    const p = M._ember_alloc(bytes);
    try {
      this._call(M._ember_tensor_read(h, p, bytes));
      return new A(M.HEAPU8.slice(p, p + bytes).buffer);
    } finally {
      M._ember_dealloc(p);
    }
  }

  _shape(h) {
    const M = this.module;
    const p = M._ember_alloc(32);
    try {
      const n = this._call(M._ember_tensor_shape(h, p));
      return Array.from(new Int32Array(M.HEAPU8.slice(p, p + 4 * n).buffer));
    } finally {
      M._ember_dealloc(p);
    }
  }
}

function describeAdapter(gpu) {
  const i = gpu?.info ?? {};
  const parts = [i.vendor, i.architecture, i.device, i.description].filter((s) => s);
  return `WebGPU ${parts.length ? parts.join(' ') : 'adapter'}`;
}

/** A tensor on the Ember device. Free its memory with dispose(). */
export class Tensor {
  /** @private made by Ember.tensor and Model.predict */
  constructor(ember, handle) {
    this._ember = ember;
    this._h = handle;
    /** @type {number[]} its sizes */
    this.shape = ember._shape(handle);
    /** @type {'float32'|'int32'|'uint8'|'int64'} */
    this.dtype = kDTypes[ember._call(ember.module._ember_tensor_dtype(handle))].name;
  }
  _handle() {
    if (!this._h) throw new Error('ember: the tensor was disposed');
    this._ember._module();
    return this._h;
  }
  /**
   * The values, row-major, as a typed array of the tensor's dtype (a copy).
   * @returns {Promise<Float32Array|Int32Array|Uint8Array|BigInt64Array>}
   */
  data() { return this._ember._read(this._handle()); }
  /** Frees the tensor; later use throws. */
  dispose() {
    if (this._h) this._ember.module?._ember_tensor_free(this._h);
    this._h = 0;
  }
}

/** A trained image classifier. Free it with dispose(). */
export class Model {
  /** @private made by Ember.loadModel */
  constructor(ember, handle) {
    this._ember = ember;
    this._h = handle;
    const info = JSON.parse(ember.module.UTF8ToString(ember._call(ember.module._ember_model_info(handle), 0)));
    /** @type {'cnn'|'mlp'} */
    this.name = info.model;
    /** @type {number[]} one image's shape [channels, size, size] */
    this.inputShape = info.inputShape;
    /** @type {number} the number of classes */
    this.classes = info.classes;
    /** @type {object} what the file records: dataset, model, epoch, test_data... */
    this.metadata = info.metadata;
    /** @type {{mean: number, std: number, classNames: string[]}|null} of metadata.dataset */
    const ds = info.metadata.dataset;
    this.dataset = typeof ds === 'string' && Object.hasOwn(DATASETS, ds) ? DATASETS[ds] : null;
  }

  /**
   * Classifies images.
   * @param {Float32Array|Uint8Array|Tensor} x N images of inputShape, row-major: f32 values
   *   normalized as in training, or u8 pixels 0..255 (normalized with the model's dataset).
   * @param {{softmax?: boolean}} [options] softmax (default true): probabilities, else logits.
   * @returns {Promise<{probabilities: Float32Array, classes: Int32Array, ms: number}>}
   *   probabilities [N * classes] row-major, the argmax class of each image (-1 for an image
   *   whose outputs hold a NaN: values are not checked, NaN or Infinity in gives NaN out), and
   *   the time the call took in milliseconds.
   * @throws {Error} for data that is not whole images of inputShape, u8 pixels for a model of
   *   an unknown dataset, a tensor of another Ember instance, or options that are not an object.
   */
  async predict(x, options = {}) {
    const t0 = performance.now();
    const e = this._ember;
    if (options === null || typeof options !== 'object')
      throw new Error(`predict: options must be an object like {softmax: true}, got ${describe(options)}`);
    const {softmax = true} = options;
    if (typeof softmax !== 'boolean') throw new Error(`predict: options.softmax is ${describe(softmax)}, not a boolean`);
    this._handle();
    const image = this.inputShape.reduce((a, b) => a * b, 1);
    let input = x, own = false;
    if (x instanceof Tensor) {
      checkOwner(x, e, 'predict');
    } else {
      if (!(x instanceof Float32Array || x instanceof Uint8Array))
        throw new Error(`predict: x must be a Float32Array, a Uint8Array or a Tensor, got ${describe(x)}`);
      if (x.length === 0 || x.length % image !== 0)
        throw new Error(`predict: ${x.length} values are not whole images of [${this.inputShape}]`);
      input = e.tensor(x, [x.length / image, ...this.inputShape]);
      own = true;
    }
    try {
      const ds = this.dataset;
      if (input.dtype === 'uint8' && !ds)
        throw new Error(`predict: u8 pixels need the model's dataset (${this.metadata.dataset ?? 'not recorded'}) to be mnist or fashion-mnist; pass normalized f32`);
      const yh = e._call(e.module._ember_model_forward(this._handle(), input._handle(), softmax ? 1 : 0,
                                                       ds?.mean ?? 0, ds?.std ?? 1), 0);
      let probabilities;
      try {
        probabilities = await e._read(yh);
      } finally {
        e.module._ember_tensor_free(yh);
      }
      const k = this.classes, n = probabilities.length / k;
      const classes = new Int32Array(n);
      for (let i = 0; i < n; ++i) {
        let best = 0;
        for (let j = 0; j < k && best >= 0; ++j) {
          const v = probabilities[i * k + j];
          if (Number.isNaN(v)) best = -1;
          else if (v > probabilities[i * k + best]) best = j;
        }
        classes[i] = best;
      }
      return {probabilities, classes, ms: performance.now() - t0};
    } finally {
      if (own) input.dispose();
    }
  }

  _handle() {
    if (!this._h) throw new Error('ember: the model was disposed');
    this._ember._module();
    return this._h;
  }
  /** Frees the model's weights; later use throws. */
  dispose() {
    if (this._h) this._ember.module?._ember_model_free(this._h);
    this._h = 0;
  }
}
