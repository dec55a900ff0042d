// The C++ side of the browser tests (tests/web/webgpu_page.mjs drives it): the suites' cases by
// index, each in two steps (harness.h), and the runtime suite of the WebGPU backend.
#include <emscripten/emscripten.h>

#include <cstring>
#include <memory>

#include "backends/webgpu/webgpu_backend.h"
#include "harness.h"

using namespace ember;

namespace webtest {

std::string expect_error(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  try {
    fn();
  } catch (const Error& e) {
    const std::string m = e.what();
    for (const auto& p : parts)
      expect(m.find(p) != std::string::npos, "the error lacks \"" + p + "\": " + m);
    return m;
  }
  throw std::runtime_error("no ember::Error was thrown");
}

namespace {

Tensor iota(int64_t n, Device d) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = float(i) * 0.5f - 3.0f;
  return from_vector(v, {n}, d);
}

std::string values_differ(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return "size " + std::to_string(got.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i])
      return "element " + std::to_string(i) + ": " + std::to_string(got[i]) +
             " != " + std::to_string(want[i]);
  return "";
}

}  // namespace

std::vector<Case> runtime_cases() {
  const Device gpu = Device::webgpu();
  std::vector<Case> cs;
  cs.push_back({"adapter_info_and_caps", [gpu] {
                  const DeviceInfo i = backend_for(gpu).info();
                  bool listed = false;
                  for (const DeviceInfo& d : available_devices()) listed |= d.device == gpu;
                  expect(listed, "available_devices() lacks webgpu");
                  const codegen::Caps& c = webgpu::backend().device_caps();
                  expect(!c.i64 && !c.f64, "i64/f64 caps must be off on WebGPU");
                  expect(c.max_buffers >= 4 && c.max_workgroup_size >= 64 && c.max_groups_x > 0,
                         "implausible caps");
                  expect(supports_dtype(gpu, DType::f32) && supports_dtype(gpu, DType::i32) &&
                             !supports_dtype(gpu, DType::i64) && !supports_dtype(gpu, DType::f64),
                         "supports_dtype disagrees with the caps");
                  std::ostringstream os;
                  os << i.name << " [" << i.kind << "] " << i.details << "; max_workgroup_size "
                     << c.max_workgroup_size << ", max_shared_bytes " << c.max_shared_bytes
                     << ", max_groups_x " << c.max_groups_x << ", f16 " << c.f16;
                  return Finish([s = os.str()](const std::string&) { return s; });
                }});
  cs.push_back({"write_readback_round_trip", [gpu] {
                  Tensor t = iota(1000, gpu);
                  Tensor odd = from_vector<int8_t>({1, -2, 3}, {3}, gpu);  // a padded tail
                  Tensor c = webgpu::request_host_copy(t), co = webgpu::request_host_copy(odd);
                  return Finish([t, c, co](const std::string& err) {
                    expect(err.empty(), "settle rejected: " + err);
                    const std::string d = values_differ(
                        c.to_vector<float>(), iota(1000, Device::ref()).to_vector<float>());
                    expect(d.empty(), d);
                    const auto o = co.to_vector<int8_t>();
                    expect(o == std::vector<int8_t>({1, -2, 3}), "the i8 tail differs");
                    return std::string("1000 f32 and 3 i8 back");
                  });
                }});
  cs.push_back(
      {"compute_readback", [gpu] {
         Tensor y = iota(4099, gpu) * 2.0 + 1.0;
         Tensor v = iota(12, gpu).reshape({3, 4}).transpose(0, 1);  // a view
         Tensor cy = webgpu::request_host_copy(y), cv = webgpu::request_host_copy(v);
         return Finish([cy, cv](const std::string& err) {
           expect(err.empty(), "settle rejected: " + err);
           Tensor want = iota(4099, Device::ref()) * 2.0 + 1.0;
           std::string d = values_differ(cy.to_vector<float>(), want.to_vector<float>());
           expect(d.empty(), d);
           Tensor wv = iota(12, Device::ref()).reshape({3, 4}).transpose(0, 1).contiguous();
           d = values_differ(cv.to_vector<float>(), wv.to_vector<float>());
           expect(d.empty(), "the transposed view: " + d);
           return std::string("y = 2x + 1 over 4099 and a transposed view");
         });
       }});
  cs.push_back({"batching", [gpu] {
                  auto& b = webgpu::backend();
                  const int64_t before = b.submissions(), tasks = b.max_tasks();
                  b.set_fusion(false);
                  b.set_max_tasks(3);
                  Tensor x = iota(64, gpu);
                  for (int i = 0; i < 9; ++i) x = x + 1.0;
                  b.set_max_tasks(tasks);
                  b.set_fusion(true);
                  const int64_t n = b.submissions() - before;
                  Tensor c = webgpu::request_host_copy(x);
                  return Finish([c, n](const std::string& err) {
                    expect(err.empty(), "settle rejected: " + err);
                    expect(n >= 3, "9 ops at 3 per batch made " + std::to_string(n) + " submits");
                    Tensor want = iota(64, Device::ref()) + 9.0;
                    const std::string d =
                        values_differ(c.to_vector<float>(), want.to_vector<float>());
                    expect(d.empty(), d);
                    return std::to_string(n) + " submissions for 9 ops at max_tasks 3";
                  });
                }});
  cs.push_back({"stale_read_is_an_error", [gpu] {
                  Tensor t = iota(16, gpu) + 1.0;
                  Tensor never = iota(16, gpu) * 3.0;
                  webgpu::request_host_copy(t);
                  return Finish([t, never](const std::string& err) {
                    expect(err.empty(), "settle rejected: " + err);
                    expect(t.to_vector<float>().size() == 16, "the landed copy reads");
                    expect_error([&] { never.to_vector<float>(); },
                                 {"[webgpu]", "no host copy was requested", "request_host_copy"});
                    Tensor w = t;
                    w.add_(1.0);
                    return expect_error([&] { t.to_vector<float>(); },
                                        {"[webgpu]", "written after", "cannot wait for the GPU"});
                  });
                }});
  cs.push_back({"i64_op_is_a_clear_error", [gpu] {
                  const std::string m = expect_error(
                      [&] {
                        Tensor a = arange(8, TensorOptions().dtype(DType::i64)).to(gpu);
                        webgpu::request_host_copy(a + a);
                      },
                      {"int64", "webgpu"});
                  return Finish([m](const std::string&) { return m; });
                }});
  cs.push_back({"allocation_over_the_limit", [gpu] {
                  const std::string m = expect_error(
                      [&] {
                        Tensor t = zeros({int64_t(1) << 30}, TensorOptions().device(gpu));
                        webgpu::request_host_copy(t);
                      },
                      {"maxBufferSize"});
                  return Finish([m](const std::string&) { return m; });
                }});
  cs.push_back(
      {"device_error_names_the_kernel", [] {
         codegen::Kernel k;
         k.name = "deliberately_broken";
         k.key = "deliberately_broken";
         k.source = "this is not WGSL";
         k.dialect = codegen::Dialect::wgsl;
         k.local_size = 64;
         webgpu::backend().compile(k);
         return Finish([](const std::string& err) {
           expect(err.find("deliberately_broken") != std::string::npos,
                  "settle() should reject naming the kernel, got: " + err);
           return expect_error([] { sync(Device::webgpu()); }, {"[webgpu]", "deliberately_broken"});
         });
       }});
  return cs;
}

}  // namespace webtest

// ---- the exports the page calls ----

namespace {
std::vector<webtest::Case>& suite(int s) {
  static std::vector<webtest::Case> cases[2];
  static bool made[2] = {false, false};
  if (!made[s]) {
    cases[s] = s == 0 ? webtest::runtime_cases() : webtest::optable_cases();
    made[s] = true;
  }
  return cases[s];
}
webtest::Finish g_finish;
std::string g_text;
const char* failed(const std::exception& e) {
  g_text = std::string("FAIL ") + e.what();
  return g_text.c_str();
}
}  // namespace

extern "C" {
/// Cases of suite 0 (runtime) or 1 (op table); -1 with the reason in wt_text() on an error.
EMSCRIPTEN_KEEPALIVE int wt_count(int s) {
  try {
    return int(suite(s).size());
  } catch (const std::exception& e) {
    failed(e);
    return -1;
  }
}
EMSCRIPTEN_KEEPALIVE const char* wt_text() { return g_text.c_str(); }
EMSCRIPTEN_KEEPALIVE const char* wt_name(int s, int i) { return suite(s)[size_t(i)].name.c_str(); }
/// Step 1: "" when it ran, else "FAIL why".
EMSCRIPTEN_KEEPALIVE const char* wt_begin(int s, int i) {
  g_finish = nullptr;
  try {
    g_finish = suite(s)[size_t(i)].begin();
    g_text.clear();
  } catch (const std::exception& e) {
    return failed(e);
  }
  return g_text.c_str();
}
/// Step 2, after settle(): "PASS note", "SKIP why" or "FAIL why".
EMSCRIPTEN_KEEPALIVE const char* wt_finish(const char* settle_error) {
  try {
    const std::string note = g_finish(settle_error);
    g_text = (note.rfind("skipped", 0) == 0 ? "SKIP " : "PASS ") + note;
  } catch (const std::exception& e) {
    failed(e);
  }
  g_finish = nullptr;
  // A failed case leaves no error behind for the next one.
  try {
    sync(Device::webgpu());
  } catch (const std::exception&) {
  }
  return g_text.c_str();
}
}
