// The JavaScript side of Ember's WebGPU backend (src/backends/webgpu): an emscripten
// --js-library of the functions the C++ side declares in src/backends/webgpu/js_api.h, written
// against today's WebGPU API (navigator.gpu) directly. The page opens the device
// (web/webgpu_device.mjs: openWebGPU) and hands it to the module factory:
//   createEmberModule({emberWebGPU: await openWebGPU()})
// GPU objects live in a handle table (index 0 is "none"). Errors the device reports later
// (validation, out of memory, device lost) are kept and raised by C++ as ember::Error at its
// next check (ember_wgpu_take_error). Host copies land asynchronously: Module.emberWebGPU.settle()
// resolves once every requested copy has landed in wasm memory.
mergeInto(LibraryManager.library, {
  // Sets and Maps do not survive emscripten's serialisation of this object: init() makes them.
  $EmberGPU__postset: 'EmberGPU.init();',
  $EmberGPU: {
    init: function() {
      EmberGPU.objs = [null];
      EmberGPU.free = [];
      EmberGPU.errors = [];
      EmberGPU.pending = new Set();
      EmberGPU.copies = new Map();
      EmberGPU.nextCopy = 1;
      EmberGPU.lost = false;
      EmberGPU.state = null;
    },
    // The page's {device, info, features, limits, adapter} (null without one); installs settle().
    ctx: function() {
      var g = Module['emberWebGPU'];
      if (!g || !g.device) return null;
      if (EmberGPU.state && EmberGPU.state.device === g.device) return EmberGPU.state;
      var dev = g.device;
      EmberGPU.state = {device: dev, queue: dev.queue, info: g.info || {}, adapter: g.adapter,
                        encoder: null, pass: null};
      dev.lost.then(function(i) {
        EmberGPU.lost = true;
        EmberGPU.errors.push('the WebGPU device was lost (' + i.reason + '): ' + i.message);
      });
      dev.addEventListener('uncapturederror', function(e) {
        EmberGPU.errors.push(e.error.constructor.name + ': ' + e.error.message);
      });
      g.settle = function() {
        return Promise.all(Array.from(EmberGPU.pending)).then(function() {
          if (EmberGPU.errors.length) throw new Error('[webgpu] ' + EmberGPU.errors.join('; '));
        });
      };
      g.pendingCopies = function() { return EmberGPU.pending.size; };
      return EmberGPU.state;
    },
    add: function(o) {
      var h = EmberGPU.free.length ? EmberGPU.free.pop() : EmberGPU.objs.length;
      EmberGPU.objs[h] = o;
      return h;
    },
    drop: function(h) {
      EmberGPU.objs[h] = null;
      EmberGPU.free.push(h);
    },
    // Errors of an operation that might fail validation, named (`what`) when they arrive.
    scoped: function(dev, what, fn) {
      dev.pushErrorScope('out-of-memory');
      dev.pushErrorScope('validation');
      var r = fn();
      var keep = function(e) { if (e) EmberGPU.errors.push(what + ': ' + e.message); };
      EmberGPU.track(dev.popErrorScope().then(keep));
      EmberGPU.track(dev.popErrorScope().then(keep));
      return r;
    },
    track: function(p) {
      var q = p.catch(function(e) { EmberGPU.errors.push(String(e && e.message || e)); });
      EmberGPU.pending.add(q);
      q.then(function() { EmberGPU.pending.delete(q); });
    },
    endPass: function(s) {
      if (s.pass) s.pass.end();
      s.pass = null;
    },
    encoder: function(s) {
      if (!s.encoder) s.encoder = s.device.createCommandEncoder();
      return s.encoder;
    },
  },

  ember_wgpu_available__deps: ['$EmberGPU'],
  ember_wgpu_available: function() { return EmberGPU.ctx() ? 1 : 0; },

  ember_wgpu_lost__deps: ['$EmberGPU'],
  ember_wgpu_lost: function() { return EmberGPU.lost ? 1 : 0; },

  // out[0..11]: the limits src/backends/webgpu/js_api.h lists, as doubles.
  ember_wgpu_limits__deps: ['$EmberGPU'],
  ember_wgpu_limits: function(out) {
    var l = EmberGPU.ctx().device.limits;
    var names = ['maxStorageBuffersPerShaderStage', 'maxBindingsPerBindGroup',
                 'maxStorageBufferBindingSize', 'maxBufferSize', 'maxComputeWorkgroupStorageSize',
                 'maxComputeInvocationsPerWorkgroup', 'maxComputeWorkgroupSizeX',
                 'maxComputeWorkgroupsPerDimension', 'minUniformBufferOffsetAlignment',
                 'minStorageBufferOffsetAlignment', 'maxUniformBufferBindingSize'];
    for (var i = 0; i < names.length; ++i) HEAPF64[(out >> 3) + i] = Number(l[names[i]] || 0);
  },

  ember_wgpu_has_feature__deps: ['$EmberGPU'],
  ember_wgpu_has_feature: function(name) {
    return EmberGPU.ctx().device.features.has(UTF8ToString(name)) ? 1 : 0;
  },

  // "vendor\narchitecture\ndevice\ndescription\nfallback(0|1)" into buf (cap bytes).
  ember_wgpu_info__deps: ['$EmberGPU'],
  ember_wgpu_info: function(buf, cap) {
    var s = EmberGPU.ctx(), i = s.info || {};
    var fallback = !!(i.isFallbackAdapter || (s.adapter && s.adapter.isFallbackAdapter));
    var t = [i.vendor || '', i.architecture || '', i.device || '', i.description || '',
             fallback ? '1' : '0'].join('\n');
    stringToUTF8(t, buf, cap);
  },

  ember_wgpu_take_error__deps: ['$EmberGPU'],
  ember_wgpu_take_error: function(buf, cap) {
    if (!EmberGPU.errors.length) return 0;
    var m = EmberGPU.errors.shift();
    stringToUTF8(m, buf, cap);
    return Math.max(1, lengthBytesUTF8(m));
  },

  // A STORAGE|COPY_SRC|COPY_DST buffer (uniform: UNIFORM|COPY_DST) of `bytes` rounded up to 4.
  ember_wgpu_create_buffer__deps: ['$EmberGPU'],
  ember_wgpu_create_buffer: function(bytes, uniform) {
    var s = EmberGPU.ctx(), U = GPUBufferUsage;
    var usage = uniform ? (U.UNIFORM | U.COPY_DST) : (U.STORAGE | U.COPY_SRC | U.COPY_DST);
    var size = Math.max(4, Math.ceil(bytes / 4) * 4);
    var b = EmberGPU.scoped(s.device, 'createBuffer of ' + size + ' bytes', function() {
      return s.device.createBuffer({size: size, usage: usage});
    });
    return EmberGPU.add(b);
  },

  ember_wgpu_destroy_buffer__deps: ['$EmberGPU'],
  ember_wgpu_destroy_buffer: function(h) {
    var b = EmberGPU.objs[h];
    if (b) b.destroy();
    EmberGPU.drop(h);
  },

  // queue.writeBuffer from wasm memory (offset and bytes multiples of 4).
  ember_wgpu_write_buffer__deps: ['$EmberGPU'],
  ember_wgpu_write_buffer: function(h, offset, src, bytes) {
    EmberGPU.ctx().queue.writeBuffer(EmberGPU.objs[h], offset, HEAPU8, src, bytes);
  },

  // A compute pipeline of WGSL `code` (entry point main) with `nbuf` storage buffers at
  // bindings 0..nbuf-1 and the params uniform at binding nbuf.
  ember_wgpu_create_pipeline__deps: ['$EmberGPU'],
  ember_wgpu_create_pipeline: function(code, nbuf, name) {
    var s = EmberGPU.ctx(), dev = s.device, label = UTF8ToString(name);
    var entries = [];
    for (var i = 0; i <= nbuf; ++i)
      entries.push({binding: i, visibility: GPUShaderStage.COMPUTE,
                    buffer: {type: i < nbuf ? 'storage' : 'uniform'}});
    return EmberGPU.scoped(dev, 'kernel ' + label, function() {
      var module = dev.createShaderModule({code: UTF8ToString(code), label: label});
      if (module.getCompilationInfo)
        EmberGPU.track(module.getCompilationInfo().then(function(info) {
          var errs = info.messages.filter(function(m) { return m.type === 'error'; });
          if (errs.length)
            EmberGPU.errors.push('kernel ' + label + ' does not compile: ' + errs.map(function(m) {
              return m.lineNum + ':' + m.linePos + ' ' + m.message;
            }).join('; '));
        }));
      var layout = dev.createBindGroupLayout({entries: entries, label: label});
      var pipeline = dev.createComputePipeline({
        label: label,
        layout: dev.createPipelineLayout({bindGroupLayouts: [layout]}),
        compute: {module: module, entryPoint: 'main'},
      });
      return EmberGPU.add({pipeline: pipeline, layout: layout, nbuf: nbuf, label: label});
    });
  },

  // Records one dispatch into the open command encoder: bufs[i] (handles) at bindings
  // 0..n-1, whole buffers; the params window [poff, poff + psize) of buffer `params`.
  ember_wgpu_dispatch__deps: ['$EmberGPU'],
  ember_wgpu_dispatch: function(p, bufs, n, params, poff, psize, groups) {
    var s = EmberGPU.ctx(), k = EmberGPU.objs[p], entries = [];
    for (var i = 0; i < n; ++i)
      entries.push({binding: i, resource: {buffer: EmberGPU.objs[HEAP32[(bufs >> 2) + i]]}});
    entries.push({binding: n,
                  resource: {buffer: EmberGPU.objs[params], offset: poff, size: psize}});
    var group = s.device.createBindGroup({layout: k.layout, entries: entries, label: k.label});
    if (!s.pass) s.pass = EmberGPU.encoder(s).beginComputePass();
    s.pass.setPipeline(k.pipeline);
    s.pass.setBindGroup(0, group);
    s.pass.dispatchWorkgroups(groups);
  },

  ember_wgpu_copy__deps: ['$EmberGPU'],
  ember_wgpu_copy: function(src, soff, dst, doff, bytes) {
    var s = EmberGPU.ctx();
    EmberGPU.endPass(s);
    EmberGPU.encoder(s).copyBufferToBuffer(EmberGPU.objs[src], soff, EmberGPU.objs[dst], doff,
                                           bytes);
  },

  // Submits what was recorded since the last submit.
  ember_wgpu_submit__deps: ['$EmberGPU'],
  ember_wgpu_submit: function() {
    var s = EmberGPU.ctx();
    EmberGPU.endPass(s);
    if (!s.encoder) return;
    var cb = s.encoder.finish();
    s.encoder = null;
    s.queue.submit([cb]);
  },

  // Copies `bytes` of buffer `src` into wasm memory at `dst` once the GPU is done (after
  // everything submitted so far), then sets the int32 at `status` to 1 (2 on failure). Returns
  // an id for ember_wgpu_cancel_copy.
  ember_wgpu_read_async__deps: ['$EmberGPU'],
  ember_wgpu_read_async: function(src, bytes, dst, status) {
    var s = EmberGPU.ctx(), U = GPUBufferUsage;
    var size = Math.max(4, Math.ceil(bytes / 4) * 4);
    var staging = s.device.createBuffer({size: size, usage: U.MAP_READ | U.COPY_DST});
    var enc = s.device.createCommandEncoder();
    enc.copyBufferToBuffer(EmberGPU.objs[src], 0, staging, 0, size);
    s.queue.submit([enc.finish()]);
    var id = EmberGPU.nextCopy++, copy = {cancelled: false};
    EmberGPU.copies.set(id, copy);
    var done = staging.mapAsync(GPUMapMode.READ).then(function() {
      if (!copy.cancelled) {
        HEAPU8.set(new Uint8Array(staging.getMappedRange(0, size), 0, bytes), dst);
        HEAP32[status >> 2] = 1;
      }
      staging.unmap();
    }, function(e) {
      if (!copy.cancelled) HEAP32[status >> 2] = 2;
      throw new Error('a host copy of ' + bytes + ' bytes failed: ' + (e && e.message || e));
    }).finally(function() {
      staging.destroy();
      EmberGPU.copies.delete(id);
    });
    EmberGPU.track(done);
    return id;
  },

  // The copy's destination is being freed: it must not be written any more.
  ember_wgpu_cancel_copy__deps: ['$EmberGPU'],
  ember_wgpu_cancel_copy: function(id) {
    var c = EmberGPU.copies.get(id);
    if (c) c.cancelled = true;
  },
});
