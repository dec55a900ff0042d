// The C side of the JavaScript API (web/ember.mjs): plain exported functions over integer
// handles (no embind, to keep the download small). Every function catches what it throws:
// failures return 0 (handles) or -1 (counts) and leave the message in ember_last_error(), which
// ember.mjs turns into a JavaScript Error.
#include <emscripten/emscripten.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "ember/autograd.h"
#include "ember/device.h"
#include "ember/error.h"
#include "ember/nn/functional/activation.h"
#include "ember/nn/models.h"
#include "ember/ops/layout.h"
#include "ember/record/safetensors.h"
#include "ember/tensor.h"
#ifdef EMBER_HAVE_WEBGPU
#include "backends/webgpu/webgpu_backend.h"
#endif

namespace {

using namespace ember;

struct Model {
  std::shared_ptr<nn::UnaryModule> module;
  nn::ModelSpec spec;
  std::string info_json;  // what ember_model_info returns
};

std::string g_error;
std::string g_text;  // the last string returned to JavaScript
int g_next = 1;
std::map<int, Tensor> g_tensors;
std::map<int, Model> g_models;

// Runs f, turning any exception into `fail` and the message in g_error.
template <typename R, typename F>
R guarded(R fail, F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    g_error = e.what();
  } catch (...) {
    g_error = "unknown error";
  }
  return fail;
}

const Tensor& tensor_of(int h) {
  auto it = g_tensors.find(h);
  EMBER_CHECK(it != g_tensors.end(), "ember.js", "tensor handle ", h,
              " is not a live tensor (disposed?)");
  return it->second;
}

Model& model_of(int h) {
  auto it = g_models.find(h);
  EMBER_CHECK(it != g_models.end(), "ember.js", "model handle ", h,
              " is not a live model (disposed?)");
  return it->second;
}

int keep(Tensor t) {
  g_tensors[g_next] = std::move(t);
  return g_next++;
}

const char* text(std::string s) {
  g_text = std::move(s);
  return g_text.c_str();
}

// The dtype codes ember.mjs uses: 0 f32, 1 i32, 2 u8, 3 i64.
DType dtype_of_code(int code) {
  switch (code) {
    case 0:
      return DType::f32;
    case 1:
      return DType::i32;
    case 2:
      return DType::u8;
    case 3:
      return DType::i64;
  }
  EMBER_FAIL("ember.js", "unknown dtype code ", code, " (0 f32, 1 i32, 2 u8, 3 i64)");
}

int code_of_dtype(DType t) {
  if (t == DType::f32) return 0;
  if (t == DType::i32) return 1;
  if (t == DType::u8) return 2;
  if (t == DType::i64) return 3;
  EMBER_FAIL("ember.js", "tensors of dtype ", dtype_name(t), " cannot be read from JavaScript");
}

// A model file's weights and metadata: a checkpoint's "model." tensors and its user JSON, or a
// model file's tensors and its ember.* metadata.
nn::StateDict model_weights(const record::SafetensorsFile& f, nlohmann::json& meta) {
  auto fmt = f.metadata.find("format");
  if (fmt == f.metadata.end() || fmt->second != "ember.checkpoint.v1") {
    for (const auto& [k, v] : f.metadata) meta[k.rfind("ember.", 0) == 0 ? k.substr(6) : k] = v;
    return f.tensors;
  }
  auto user = f.metadata.find("user");
  if (user != f.metadata.end()) {
    const nlohmann::json u = nlohmann::json::parse(user->second, nullptr, false);
    if (u.is_object())
      for (const auto& [k, v] : u.items()) meta[k] = v;
  }
  for (const char* k : {"format", "epoch", "step"})
    if (f.metadata.count(k)) meta[k] = f.metadata.at(k);
  nn::StateDict w;
  for (const auto& [k, v] : f.tensors)
    if (k.rfind("model.", 0) == 0) w.set(k.substr(6), v);
  return w;
}

}  // namespace

extern "C" {

/// Memory for ember.mjs to pass arrays through (malloc is not exported by default).
EMSCRIPTEN_KEEPALIVE void* ember_alloc(int bytes) { return std::malloc(bytes > 0 ? bytes : 1); }
EMSCRIPTEN_KEEPALIVE void ember_dealloc(void* p) { std::free(p); }

/// The message of the last failure.
EMSCRIPTEN_KEEPALIVE const char* ember_last_error() { return g_error.c_str(); }

/// Makes the default device WebGPU (want_webgpu and a device was given) or the cpu. Returns 1
/// for WebGPU, 0 for the cpu, -1 on failure.
EMSCRIPTEN_KEEPALIVE int ember_init(int want_webgpu) {
  return guarded(-1, [&] {
#ifdef EMBER_HAVE_WEBGPU
    if (want_webgpu && webgpu::available()) {
      Device::set_default_device(Device::webgpu());
      return 1;
    }
#endif
    EMBER_CHECK(!want_webgpu, "ember.js", "this build has no WebGPU backend");
    Device::set_default_device(Device::cpu());
    return 0;
  });
}

/// Sets the wasm cpu backend's thread count (ember::set_num_threads: n <= 0 the default, capped
/// by the backend; no effect in the single-threaded module) and returns the count now in use.
EMSCRIPTEN_KEEPALIVE int ember_set_num_threads(int n) {
  return guarded(-1, [&] {
    set_num_threads(n);
    return get_num_threads();
  });
}

/// The thread count the wasm cpu backend's kernels use (1 in the single-threaded module).
EMSCRIPTEN_KEEPALIVE int ember_get_num_threads() {
  return guarded(-1, [&] { return get_num_threads(); });
}

/// A tensor of `ndim` sizes at `shape` holding a copy of `data` (dtype code, see above), on the
/// default device. Returns its handle, 0 on failure.
EMSCRIPTEN_KEEPALIVE int ember_tensor_new(const void* data, int dtype, const int32_t* shape,
                                          int ndim) {
  return guarded(0, [&] {
    EMBER_CHECK(ndim >= 0 && ndim <= 8, "ember.tensor", "rank ", ndim,
                " exceeds 8, the most ember.mjs passes");
    Shape s(shape, shape + ndim);
    for (int64_t d : s)
      EMBER_CHECK(d >= 0, "ember.tensor", "negative size in shape ", shape_str(s));
    return keep(from_blob(data, s, dtype_of_code(dtype), Device::default_device()));
  });
}

EMSCRIPTEN_KEEPALIVE void ember_tensor_free(int h) { g_tensors.erase(h); }

/// The tensor's dtype code, rank and sizes (written to `shape_out`, room for 8). -1: failure.
EMSCRIPTEN_KEEPALIVE int ember_tensor_dtype(int h) {
  return guarded(-1, [&] { return code_of_dtype(tensor_of(h).dtype()); });
}
EMSCRIPTEN_KEEPALIVE int ember_tensor_shape(int h, int32_t* shape_out) {
  return guarded(-1, [&] {
    const Shape& s = tensor_of(h).shape();
    EMBER_CHECK(s.size() <= 8, "ember.js", "rank ", s.size(), " above 8");
    for (size_t i = 0; i < s.size(); ++i) shape_out[i] = static_cast<int32_t>(s[i]);
    return static_cast<int>(s.size());
  });
}

/// Starts copying a device tensor to the host. Returns 1 when ember.mjs must await
/// Module.emberWebGPU.settle() before ember_tensor_read, 0 when it can read now, -1 on failure.
EMSCRIPTEN_KEEPALIVE int ember_tensor_request_read(int h) {
  return guarded(-1, [&] {
    const Tensor& t = tensor_of(h);
#ifdef EMBER_HAVE_WEBGPU
    if (t.device().type() == DeviceType::webgpu) {
      // The handle now names the tensor whose storage is copied (t, or t made contiguous).
      g_tensors[h] = webgpu::request_host_copy(t);
      return 1;
    }
#endif
    (void)t;
    return 0;
  });
}

/// Copies the tensor's values (row-major) into `out` of `bytes` bytes. Returns 0, -1 on failure.
EMSCRIPTEN_KEEPALIVE int ember_tensor_read(int h, void* out, int bytes) {
  return guarded(-1, [&] {
    const Tensor host = tensor_of(h).to(Device::cpu()).contiguous();
    const size_t n = static_cast<size_t>(host.numel()) * dtype_size(host.dtype());
    EMBER_CHECK(n == static_cast<size_t>(bytes), "ember.js", "reading ", n, " bytes into ", bytes);
    if (n) std::memcpy(out, host.raw_data(), n);
    return 0;
  });
}

/// Loads a model file (`len` bytes of safetensors: `ember train`'s model.safetensors or a
/// checkpoint) onto the default device. Returns its handle, 0 on failure.
EMSCRIPTEN_KEEPALIVE int ember_model_load(const char* bytes, int len) {
  return guarded(0, [&] {
    EMBER_CHECK(len >= 0, "ember.loadModel", "negative length");
    const record::SafetensorsFile f =
        record::deserialize_safetensors(std::string(bytes, len), "model file", Device::cpu());
    nlohmann::json meta = nlohmann::json::object();
    const nn::StateDict w = model_weights(f, meta);
    Model m;
    m.spec = nn::infer_model_spec(w);
    m.module = nn::model_from_state_dict(w);
    const nn::ModelShape& s = m.spec.shape;
    m.info_json = nlohmann::json{
        {"model", m.spec.name},
        {"inputShape", {s.channels, s.image_size, s.image_size}},
        {"classes", s.classes},
        {"metadata",
         meta}}.dump();
    g_models[g_next] = std::move(m);
    return g_next++;
  });
}

EMSCRIPTEN_KEEPALIVE void ember_model_free(int h) { g_models.erase(h); }

/// JSON: {"model", "inputShape": [C, S, S], "classes", "metadata": {...}}; null on failure.
EMSCRIPTEN_KEEPALIVE const char* ember_model_info(int h) {
  return guarded<const char*>(nullptr, [&] { return text(model_of(h).info_json); });
}

/// The model's output for input tensor `x` ([N, C, S, S] or [C, S, S]; f32 normalized, or u8
/// pixels normalized here as `ember train` does: (x / 255 - mean) / std), softmax over the
/// classes when `softmax`. Returns the f32 [N, classes] tensor's handle, 0 on failure.
EMSCRIPTEN_KEEPALIVE int ember_model_forward(int mh, int xh, int softmax, double mean, double std) {
  return guarded(0, [&] {
    Model& m = model_of(mh);
    Tensor x = tensor_of(xh);
    const nn::ModelShape& s = m.spec.shape;
    const Shape want{s.channels, s.image_size, s.image_size};
    if (x.dim() == 3) x = x.unsqueeze(0);
    EMBER_CHECK(x.dim() == 4 && Shape(x.shape().begin() + 1, x.shape().end()) == want,
                "model.predict", "input ", shape_str(x.shape()), " is not [N, ", s.channels, ", ",
                s.image_size, ", ", s.image_size, "] images");
    EMBER_CHECK(x.dtype() == DType::f32 || x.dtype() == DType::u8, "model.predict", "input dtype ",
                dtype_name(x.dtype()), " (expected f32 normalized images or u8 pixels)");
    EMBER_CHECK(x.size(0) > 0, "model.predict", "no images (input ", shape_str(x.shape()), ")");
    NoGradGuard ng;
    // Chunks of kChunk images: any N runs in the memory of one chunk's activations (a batch
    // of 100,000 at once needed more than wasm's 4 GiB, or WebGPU's maxBufferSize).
    constexpr int64_t kChunk = 256;
    std::vector<Tensor> outs;
    for (int64_t i = 0; i < x.size(0); i += kChunk) {
      Tensor c = x.narrow(0, i, std::min(kChunk, x.size(0) - i)).to(Device::default_device());
      if (c.dtype() == DType::u8) c = (c.to(DType::f32) * (1.0 / 255.0) - mean) * (1.0 / std);
      Tensor y = m.module->forward(c);
      outs.push_back(softmax ? nn::functional::softmax(y, 1) : y);
    }
    return keep(outs.size() == 1 ? outs[0] : cat(outs, 0));
  });
}

}  // extern "C"
