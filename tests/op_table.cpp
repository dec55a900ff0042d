// The op table runner and its helpers.
#include "op_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <set>
#include <sstream>

namespace ember::testing {

namespace {
// Every GPU kernel a test lowers is rebuilt on each cache hit and compared with the cached one
// (src/codegen/common.cpp): a kernel key that misses something the source bakes in fails loudly.
const bool g_check_kernel_keys = setenv("EMBER_CHECK_KERNEL_KEYS", "1", 0) == 0;

std::vector<OpCase>& registry() {
  static std::vector<OpCase> r;
  return r;
}
}  // namespace

namespace {
// Registers the gtests of registry()[index], one per backend (defined with the runner below).
void register_gtests(size_t index, const char* file, int line);
}  // namespace

int register_case(OpCase c, const char* file, int line) {
  registry().push_back(std::move(c));
  register_gtests(registry().size() - 1, file, line);
  return int(registry().size());
}
const std::vector<OpCase>& all_cases() { return registry(); }

Tensor uniform(const Shape& shape, DType dtype, uint64_t seed, double lo, double hi) {
  manual_seed(Device::ref(), seed);
  Tensor u = rand(shape, {DType::f64, Device::ref()}) * (hi - lo) + lo;
  if (is_bool(dtype)) return ge(u, (lo + hi) / 2);
  if (!is_floating(dtype)) u = floor(u);
  return u.to(dtype);
}

Tensor integers(const Shape& shape, DType dtype, uint64_t seed, int64_t lo, int64_t hi) {
  manual_seed(Device::ref(), seed);
  return randint(lo, hi, shape, {DType::i64, Device::ref()}).to(dtype);
}

std::vector<DType> all_dtypes() { return {kAllDTypes, kAllDTypes + kNumDTypes}; }
std::vector<DType> float_dtypes() { return {DType::f32, DType::f64, DType::f16, DType::bf16}; }
std::vector<DType> numeric_dtypes() {
  auto v = all_dtypes();
  v.pop_back();
  return v;
}
std::vector<DType> int_dtypes() {
  return {DType::i8, DType::i16, DType::i32, DType::i64,
          DType::u8, DType::u16, DType::u32, DType::u64};
}
std::vector<DType> signed_dtypes() {
  return {DType::f32, DType::f64, DType::f16, DType::bf16,
          DType::i8,  DType::i16, DType::i32, DType::i64};
}

namespace {
void tolerance(DType t, double& rtol, double& atol) {
  switch (t) {
    case DType::f64:
      rtol = 1e-10;
      atol = 1e-12;
      break;
    case DType::f32:
      rtol = 1e-5;
      atol = 1e-6;
      break;
    case DType::f16:
      rtol = 2e-3;
      atol = 1e-3;
      break;
    case DType::bf16:
      rtol = 1.6e-2;
      atol = 1e-2;
      break;
    default:
      rtol = 0;
      atol = 0;
      break;
  }
}
}  // namespace

namespace {
// Where the expected value is a special float, got must be the same special value, bit for bit
// up to NaN's payload: a zero of the same sign, the same infinity, a NaN. Returns why not, or
// nullptr when it is (or `want` is an ordinary number: the tolerance decides). A zero of the
// wrong sign is a bug, not rounding (IEEE rounding never flips the sign of an exact zero); a
// nonzero got where a zero is expected is left to the tolerance (sums that cancel round to a
// tiny value in another order). NaN's sign and payload are not compared: torch defines neither
// (x86 makes 0 * inf a negative NaN, ARM a positive one).
const char* special_mismatch(double want, double got) {
  if (std::isnan(want)) return std::isnan(got) ? nullptr : "expected NaN";
  if (std::isinf(want)) return got == want ? nullptr : "expected this infinity";
  if (want == 0 && got == 0 && std::signbit(want) != std::signbit(got))
    return "the sign of zero differs";
  return nullptr;
}
}  // namespace

std::string compare(const Tensor& want, const Tensor& got, double tol_scale) {
  std::ostringstream os;
  if (!want.defined() || !got.defined())
    return want.defined() == got.defined() ? "" : "one output is undefined";
  if (want.shape() != got.shape()) {
    os << "shape " << shape_str(got.shape()) << " != expected " << shape_str(want.shape());
    return os.str();
  }
  if (want.dtype() != got.dtype()) {
    os << "dtype " << dtype_name(got.dtype()) << " != expected " << dtype_name(want.dtype());
    return os.str();
  }
  double rtol, atol;
  tolerance(want.dtype(), rtol, atol);
  rtol *= tol_scale;
  atol *= tol_scale;
  const auto w = want.to_vector<double>(), g = got.to_vector<double>();
  for (size_t i = 0; i < w.size(); ++i) {
    const char* why = special_mismatch(w[i], g[i]);
    if (!why) {
      if (std::isnan(w[i]) || std::isinf(w[i]) || w[i] == g[i]) continue;
      if (std::fabs(w[i] - g[i]) <= atol + rtol * std::fabs(w[i])) continue;
      why = "outside the tolerance";
    }
    os << "element " << i << ": got " << g[i] << ", expected " << w[i] << ": " << why << " (shape "
       << shape_str(want.shape()) << ", " << dtype_name(want.dtype()) << ")";
    return os.str();
  }
  return "";
}

namespace {

enum class Layout { contiguous, permuted, stepped, broadcast, channels_last };
const char* layout_name(Layout l) {
  switch (l) {
    case Layout::contiguous:
      return "contiguous";
    case Layout::permuted:
      return "permuted";
    case Layout::stepped:
      return "stepped-slice";
    case Layout::broadcast:
      return "broadcast";
    case Layout::channels_last:
      return "channels-last";
  }
  return "?";
}

// The same logical values as `base` (contiguous on `device`), laid out as `layout`.
// Broadcast changes the values: row 0 repeated along dim 0.
Tensor apply_layout(const Tensor& base, Layout layout) {
  const int64_t r = base.dim();
  if (r == 0 || base.numel() == 0) return base;
  switch (layout) {
    case Layout::contiguous:
      return base;
    case Layout::permuted: {
      if (r < 2) return apply_layout(base, Layout::stepped);
      std::vector<int64_t> rev(static_cast<size_t>(r));
      for (int64_t i = 0; i < r; ++i) rev[size_t(i)] = r - 1 - i;
      return base.permute(rev).contiguous().permute(rev);
    }
    case Layout::stepped: {
      Shape big = base.shape();
      big.back() *= 2;
      Tensor holder = zeros(big, {base.dtype(), base.device()});
      Tensor view = holder.slice(-1, 0, big.back(), 2);
      view.copy_(base);
      return view;
    }
    case Layout::broadcast:
      return base.narrow(0, 0, 1).expand(base.shape());
    case Layout::channels_last:  // 4-d and 5-d inputs only (other cases skip this layout)
      if (r == 4) return base.contiguous(MemoryFormat::channels_last);
      if (r == 5) return base.contiguous(MemoryFormat::channels_last_3d);
      return base;
  }
  return base;
}

// ---- the runner: one gtest per case and backend, OpTable.<case>/<backend> ----

// The backends this binary registers op-table tests for: those built into it.
const std::vector<std::string>& backends_built() {
  static const std::vector<std::string> b = {
      "ref",
      "cpu",
#ifdef EMBER_HAVE_VULKAN
      "vulkan",
#endif
#ifdef EMBER_HAVE_OPENCL
      "opencl",
#endif
  };
  return b;
}

// A case's name as a gtest name: '-' becomes 'm' ("sum/-1-2" -> "sum/m1m2"), any other character
// but [A-Za-z0-9_/] '_' (a gtest filter reads '-' as its negative part, ':' as a separator).
std::string gtest_name(const std::string& name) {
  std::string out;
  for (char ch : name) {
    if (ch == '-')
      out += 'm';
    else if (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '/')
      out += ch;
    else
      out += '_';
  }
  return out;
}

// Every registered gtest name (without "OpTable."), to keep them unique.
std::set<std::string>& gtest_names() {
  static std::set<std::string> s;
  return s;
}
std::vector<std::string>& duplicate_names() {
  static std::vector<std::string> d;
  return d;
}

// The devices of `backend` under test: ref, cpu, or every available Vulkan (OpenCL) device; with
// EMBER_OP_TABLE_DEVICES set ("cpu,vulkan:0"), only those it names. Empty, with the reason in
// `why`, when none is left.
std::vector<Device> devices_under_test(const std::string& backend, std::string& why) {
  std::vector<Device> found;
  if (backend == "ref") {
    found.push_back(Device::ref());
  } else if (backend == "cpu") {
    found.push_back(Device::cpu());
  } else {
    const DeviceType type = backend == "opencl" ? DeviceType::opencl : DeviceType::vulkan;
    for (const auto& d : available_devices())
      if (d.device.type() == type) found.push_back(d.device);
  }
  if (found.empty()) {
    why = "no " + backend + " device available";
    return found;
  }
  const char* only = std::getenv("EMBER_OP_TABLE_DEVICES");
  if (!only) return found;
  const std::string list = "," + std::string(only) + ",";
  std::vector<Device> out;
  for (const Device& d : found)
    if (list.find("," + d.str() + ",") != std::string::npos ||
        list.find("," + backend + ",") != std::string::npos)
      out.push_back(d);
  if (out.empty()) why = "EMBER_OP_TABLE_DEVICES=" + std::string(only) + " leaves out " + backend;
  return out;
}

// What the op-table tests of this process ran, printed once at the end.
struct Tally {
  int64_t tests = 0, runs = 0, skipped = 0, failures = 0;
  std::set<size_t> cases;  // indices into all_cases()
};
Tally& tally() {
  static Tally t;
  return t;
}

// Every dtype of case `index` on each of `devices`, in every layout, against the reference
// backend on contiguous copies of the same values.
void run_case(size_t index, const std::string& backend) {
  const OpCase& c = all_cases()[index];
  std::string why;
  const std::vector<Device> devices = devices_under_test(backend, why);
  if (devices.empty()) GTEST_SKIP() << why;
  // A dtype the device lacks is an error by design (tested in the backend's own tests).
  const bool any = std::any_of(c.dtypes.begin(), c.dtypes.end(), [&](DType dt) {
    return std::any_of(devices.begin(), devices.end(),
                       [&](const Device& d) { return supports_dtype(d, dt); });
  });
  if (!any) GTEST_SKIP() << c.name << ": none of its dtypes is supported on " << backend;
  // The seeds: 1234 + the op x dtype case's number in the whole table (from 1), whichever tests
  // run.
  uint64_t seed = 1234;
  for (size_t i = 0; i < index; ++i) seed += all_cases()[i].dtypes.size();
  int64_t runs = 0, skipped = 0;
  std::vector<std::string> failures;
  const Layout layouts[] = {Layout::contiguous, Layout::permuted, Layout::stepped,
                            Layout::broadcast, Layout::channels_last};
  for (DType dt : c.dtypes) {
    const Inputs base = c.inputs(dt, ++seed);
    for (Layout layout : layouts) {
      if (layout == Layout::channels_last &&
          std::none_of(base.begin(), base.end(), [](const Tensor& t) {
            return t.defined() && (t.dim() == 4 || t.dim() == 5);
          }))
        continue;
      // The expected values: reference backend on contiguous copies of this layout's values.
      Inputs ref_in;
      for (size_t i = 0; i < base.size(); ++i) {
        const bool vary = c.vary.empty() || c.vary[i];
        ref_in.push_back(vary && base[i].defined() ? apply_layout(base[i], layout).contiguous()
                                                   : base[i]);
      }
      std::vector<Tensor> want;
      try {
        want = c.fn(ref_in);
      } catch (const std::exception& e) {
        failures.push_back(c.name + " [" + dtype_name(dt) + ", ref, " + layout_name(layout) +
                           "]: threw " + e.what());
        continue;
      }
      for (const Device& dev : devices) {
        if (!supports_dtype(dev, dt)) {
          ++skipped;
          continue;
        }
        ++runs;
        const std::string where =
            c.name + " [" + dtype_name(dt) + ", " + dev.str() + ", " + layout_name(layout) + "]";
        try {
          Inputs in;
          for (size_t i = 0; i < base.size(); ++i) {
            const bool vary = c.vary.empty() || c.vary[i];
            Tensor on_dev = base[i].defined() ? base[i].to(dev) : base[i];
            in.push_back(vary && on_dev.defined() ? apply_layout(on_dev, layout) : on_dev);
          }
          const auto got = c.fn(in);
          if (got.size() != want.size()) {
            failures.push_back(where + ": output count differs");
            continue;
          }
          for (size_t k = 0; k < got.size(); ++k) {
            // An output whose dtype the device lacks may be left out (undefined) by the case.
            if (!got[k].defined() && want[k].defined() && !supports_dtype(dev, want[k].dtype())) {
              ++skipped;
              continue;
            }
            if (got[k].defined() && got[k].device() != dev) {
              failures.push_back(where + ": output " + std::to_string(k) + " is on " +
                                 got[k].device().str());
              continue;
            }
            const std::string m = compare(want[k], got[k], c.tol_scale);
            if (!m.empty()) failures.push_back(where + " output " + std::to_string(k) + ": " + m);
          }
        } catch (const std::exception& e) {
          failures.push_back(where + ": threw " + e.what());
        }
      }
    }
  }
  Tally& t = tally();
  ++t.tests;
  t.cases.insert(index);
  t.runs += runs;
  t.skipped += skipped;
  t.failures += int64_t(failures.size());
  // EMBER_OP_TABLE_MAX_FAILURES: how many failures to print per test (default 60).
  const char* max_env = std::getenv("EMBER_OP_TABLE_MAX_FAILURES");
  const size_t max_print = max_env ? size_t(std::strtoull(max_env, nullptr, 10)) : 60;
  for (size_t i = 0; i < failures.size() && i < max_print; ++i) ADD_FAILURE() << failures[i];
  if (failures.size() > max_print)
    ADD_FAILURE() << (failures.size() - max_print) << " more failures not printed";
  EXPECT_GT(runs, 0) << c.name << " on " << backend;
}

class OpTableCase : public ::testing::Test {
 public:
  OpTableCase(size_t index, std::string backend) : index_(index), backend_(std::move(backend)) {}
  void TestBody() override { run_case(index_, backend_); }

 private:
  size_t index_;
  std::string backend_;
};

void register_gtests(size_t index, const char* file, int line) {
  const std::string base = gtest_name(registry()[index].name);
  for (const std::string& backend : backends_built()) {
    std::string name = base + "/" + backend;
    if (!gtest_names().insert(name).second) {
      duplicate_names().push_back(registry()[index].name);
      for (int k = 2;
           !gtest_names().insert(name = base + "_" + std::to_string(k) + "/" + backend).second;)
        ++k;
    }
    ::testing::RegisterTest(
        "OpTable", name.c_str(), nullptr, nullptr, file, line,
        [index, backend]() -> ::testing::Test* { return new OpTableCase(index, backend); });
  }
}

// Prints what this process's op-table tests ran (bench/gpu_check.sh reads the "op table:" line).
class OpTableSummary : public ::testing::Environment {
 public:
  void TearDown() override {
    const Tally& t = tally();
    if (t.tests == 0) return;
    int64_t op_dtype_cases = 0;
    for (size_t i : t.cases) op_dtype_cases += int64_t(all_cases()[i].dtypes.size());
    std::cout << "op table: " << t.tests << " case x backend tests of " << gtest_names().size()
              << " (" << t.cases.size() << " of " << all_cases().size() << " cases, "
              << op_dtype_cases << " op x dtype cases), " << t.runs
              << " runs (5 layouts; channels-last only for 4-d/5-d inputs), " << t.skipped
              << " skipped (dtype not on the device), " << t.failures << " failures\n";
  }
};
::testing::Environment* const kOpTableSummary =
    ::testing::AddGlobalTestEnvironment(new OpTableSummary);

}  // namespace

// Each case is registered once per backend built, under a name a gtest filter can pick:
// `--gtest_filter='OpTable.add/cpu'` runs one op on one backend.
TEST(OpTable, EveryCaseIsATestOnEveryBackend) {
  ASSERT_GT(all_cases().size(), 0u) << "no op-table case registered";
  EXPECT_TRUE(duplicate_names().empty()) << "case names registered twice (or equal as gtest "
                                            "names), first: "
                                         << (duplicate_names().empty() ? "" : duplicate_names()[0]);
  const ::testing::UnitTest& u = *::testing::UnitTest::GetInstance();
  std::set<std::string> registered;
  for (int i = 0; i < u.total_test_suite_count(); ++i) {
    const ::testing::TestSuite& s = *u.GetTestSuite(i);
    if (std::string(s.name()) != "OpTable") continue;
    for (int j = 0; j < s.total_test_count(); ++j) registered.insert(s.GetTestInfo(j)->name());
  }
  EXPECT_EQ(registered.size(), all_cases().size() * backends_built().size() + 1);
  for (const char* name : {"add/ref", "add/cpu", "sum/m1m2/cpu", "conv2d/basic/ref"})
    EXPECT_EQ(registered.count(name), 1u) << name;
#ifdef EMBER_HAVE_VULKAN
  EXPECT_EQ(registered.count("add/vulkan"), 1u);
#endif
#ifdef EMBER_HAVE_OPENCL
  EXPECT_EQ(registered.count("add/opencl"), 1u);
#endif
  EXPECT_EQ(gtest_name("min/dim-1_keep"), "min/dimm1_keep");
  EXPECT_EQ(gtest_name("a:b*c.d"), "a_b_c_d");
}

}  // namespace ember::testing
