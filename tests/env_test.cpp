// The environment-variable parser (src/core/env.h) every EMBER_* setting goes through.
#include "core/env.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "ember/device.h"
#include "ember/device_choices.h"
#include "ember/error.h"
#include "test_util.h"

namespace {

using ember::test::EnvGuard;

using ember::env_cache_dir;
using ember::env_choice;
using ember::env_flag;
using ember::env_int;
using ember::env_string;

// What `f` wrote to stderr.
template <typename F>
std::string stderr_of(F f) {
  ::testing::internal::CaptureStderr();
  f();
  return ::testing::internal::GetCapturedStderr();
}

TEST(EnvTest, FlagWordsInAnyCase) {
  for (const char* on : {"1", "on", "ON", "true", "True", "yes", "YES"}) {
    EnvGuard e("EMBER_TEST_ENV_FLAG", on);
    EXPECT_TRUE(env_flag("EMBER_TEST_ENV_FLAG", false)) << on;
  }
  // EMBER_FUSION_LOG=off and EMBER_CHECK=false turned the feature on; EMBER_FUSION=OFF or no
  // left fusion on.
  for (const char* off : {"0", "off", "OFF", "Off", "false", "FALSE", "no", "No"}) {
    EnvGuard e("EMBER_TEST_ENV_FLAG", off);
    EXPECT_FALSE(env_flag("EMBER_TEST_ENV_FLAG", true)) << off;
  }
}

TEST(EnvTest, UnsetOrEmptyIsTheDefaultSilently) {
  for (const char* v : {static_cast<const char*>(nullptr), ""}) {
    EnvGuard e("EMBER_TEST_ENV_UNSET", v);
    const std::string err = stderr_of([] {
      EXPECT_TRUE(env_flag("EMBER_TEST_ENV_UNSET", true));
      EXPECT_FALSE(env_flag("EMBER_TEST_ENV_UNSET", false));
      EXPECT_EQ(env_int("EMBER_TEST_ENV_UNSET", 7, 1, 10), 7);
      EXPECT_EQ(env_choice("EMBER_TEST_ENV_UNSET", {"a", "b"}, "b"), "b");
      EXPECT_EQ(env_string("EMBER_TEST_ENV_UNSET"), "");
    });
    EXPECT_EQ(err, "");
  }
}

TEST(EnvTest, BadFlagWarnsOnceAndKeepsTheDefault) {
  EnvGuard e("EMBER_TEST_ENV_BADFLAG", "maybe");
  const std::string err = stderr_of([] {
    EXPECT_TRUE(env_flag("EMBER_TEST_ENV_BADFLAG", true));
    EXPECT_TRUE(env_flag("EMBER_TEST_ENV_BADFLAG", true));  // read again: no second warning
  });
  EXPECT_EQ(err,
            "warning: [env] EMBER_TEST_ENV_BADFLAG=maybe is not a flag (1/0, on/off, true/false, "
            "yes/no); using the default 'on'\n");
}

TEST(EnvTest, IntegersAreParsedStrictly) {
  struct Case {
    const char* value;
    int64_t want;
  };
  for (const Case& c : {Case{"5", 5}, Case{"+5", 5}, Case{"1", 1}, Case{"10", 10}}) {
    EnvGuard e("EMBER_TEST_ENV_INT", c.value);
    EXPECT_EQ(env_int("EMBER_TEST_ENV_INT", 7, 1, 10), c.want) << c.value;
  }
  // Not the whole string, not decimal, out of range, or past int64_t (strtoll clamped
  // 99999999999999999999 to INT64_MAX silently): the default, with a warning naming the range.
  for (const char* bad : {"5x", " 5", "5 ", "0x10", "1e3", "-", "+", "+-1", "0", "11", "-3",
                          "99999999999999999999", "-99999999999999999999", "9223372036854775808"}) {
    EnvGuard e("EMBER_TEST_ENV_BADINT", bad);
    const std::string err =
        stderr_of([&] { EXPECT_EQ(env_int("EMBER_TEST_ENV_BADINT", 7, 1, 10), 7) << bad; });
    EXPECT_EQ(err, std::string("warning: [env] EMBER_TEST_ENV_BADINT=") + bad +
                       " is not an integer in [1, 10]; using the default 7\n")
        << bad;
  }
  // No upper bound: the range reads ">= min".
  EnvGuard neg("EMBER_TEST_ENV_BADINT", "-1");
  EXPECT_EQ(
      stderr_of([] { env_int("EMBER_TEST_ENV_BADINT", 4, 1, INT64_MAX); }),
      "warning: [env] EMBER_TEST_ENV_BADINT=-1 is not an integer >= 1; using the default 4\n");
  EnvGuard big("EMBER_TEST_ENV_INT", "9223372036854775807");
  EXPECT_EQ(env_int("EMBER_TEST_ENV_INT", 0, 0, INT64_MAX), INT64_MAX);
  EnvGuard low("EMBER_TEST_ENV_INT", "-9223372036854775808");
  EXPECT_EQ(env_int("EMBER_TEST_ENV_INT", 0, INT64_MIN, 0), INT64_MIN);
}

TEST(EnvTest, ChoiceMatchesAnyCaseAndListsTheAllowedValues) {
  EnvGuard e("EMBER_TEST_ENV_CHOICE", "OpenBLAS");
  EXPECT_EQ(env_choice("EMBER_TEST_ENV_CHOICE", {"auto", "onednn", "openblas"}, "auto"),
            "openblas");
  EnvGuard bad("EMBER_TEST_ENV_CHOICE", "bogus");
  std::string got;
  const std::string err = stderr_of([&] {
    got = env_choice("EMBER_TEST_ENV_CHOICE", {"auto", "onednn", "openblas"}, "auto");
  });
  EXPECT_EQ(got, "auto");
  EXPECT_EQ(err,
            "warning: [env] EMBER_TEST_ENV_CHOICE=bogus is not one of auto|onednn|openblas; "
            "using the default 'auto'\n");
  // Another bad value of the same variable is said too (once per variable and value).
  EnvGuard bad2("EMBER_TEST_ENV_CHOICE", "blas");
  EXPECT_NE(stderr_of([] {
              env_choice("EMBER_TEST_ENV_CHOICE", {"auto"}, "auto");
            }).find("EMBER_TEST_ENV_CHOICE=blas is not one of auto; using the default 'auto'"),
            std::string::npos);
}

// A default outside the caller's own range or choices is a bug in Ember (EMBER_VULKAN_MAX_TASKS
// read with default 0 in [1, 1000000] and warned "using 0" while 16 was used): an error naming
// the variable, set or not.
TEST(EnvTest, DefaultOutsideTheAllowedValuesIsAnError) {
  for (const char* v : {static_cast<const char*>(nullptr), "", "5", "bogus"}) {
    EnvGuard e("EMBER_TEST_ENV_BADDEF", v);
    const std::string err = stderr_of([] {
      for (int64_t def : {int64_t(0), int64_t(11), int64_t(-1)}) {
        try {
          env_int("EMBER_TEST_ENV_BADDEF", def, 1, 10);
          ADD_FAILURE() << "no error for default " << def;
        } catch (const ember::Error& err) {
          EXPECT_EQ(std::string(err.what())
                        .rfind("[env] EMBER_TEST_ENV_BADDEF: the default " + std::to_string(def) +
                                   " is not an integer in [1, 10]",
                               0),
                    0u)
              << err.what();
        }
      }
      EXPECT_THROW(env_int("EMBER_TEST_ENV_BADDEF", 0, 1, INT64_MAX), ember::Error);
      try {
        env_choice("EMBER_TEST_ENV_BADDEF", {"auto", "onednn"}, "openblas");
        ADD_FAILURE() << "no error";
      } catch (const ember::Error& err) {
        EXPECT_EQ(std::string(err.what())
                      .rfind("[env] EMBER_TEST_ENV_BADDEF: the default 'openblas' is not one of "
                             "auto|onednn",
                             0),
                  0u)
            << err.what();
      }
      // The allowed spelling exactly: a default in another case is a typo too.
      EXPECT_THROW(env_choice("EMBER_TEST_ENV_BADDEF", {"auto"}, "Auto"), ember::Error);
    });
    EXPECT_EQ(err, "") << "a bad default is thrown, not warned";
  }
  // The ends of the range are allowed defaults.
  EXPECT_EQ(env_int("EMBER_TEST_ENV_BADDEF", 1, 1, 10), 1);
  EXPECT_EQ(env_int("EMBER_TEST_ENV_BADDEF", 10, 1, 10), 10);
}

TEST(EnvTest, CacheDirFollowsTheVariableThenXdgThenHome) {
  EnvGuard xdg("XDG_CACHE_HOME", "/xdg");
  EnvGuard home("HOME", "/home/u");
  {
    EnvGuard e("EMBER_TEST_ENV_CACHE", "/my/cache");
    EXPECT_EQ(env_cache_dir("EMBER_TEST_ENV_CACHE", "kernels"), "/my/cache");
  }
  for (const char* off : {"0", "off", "OFF", "false", "no"}) {
    EnvGuard e("EMBER_TEST_ENV_CACHE", off);
    EXPECT_EQ(env_cache_dir("EMBER_TEST_ENV_CACHE", "kernels"), "") << off;
  }
  EnvGuard e("EMBER_TEST_ENV_CACHE", nullptr);
  EXPECT_EQ(env_cache_dir("EMBER_TEST_ENV_CACHE", "kernels"), "/xdg/ember/kernels");
  EnvGuard no_xdg("XDG_CACHE_HOME", nullptr);
  EXPECT_EQ(env_cache_dir("EMBER_TEST_ENV_CACHE", "autotune"), "/home/u/.cache/ember/autotune");
  EnvGuard no_home("HOME", nullptr);
  EXPECT_EQ(env_cache_dir("EMBER_TEST_ENV_CACHE", "autotune"), "");
}

// Device strings match in any case; an unknown one lists device_choices(), the backends built.
TEST(EnvTest, DeviceStringsInAnyCaseAndTheChoicesListed) {
  EXPECT_EQ(ember::Device::parse("CPU"), ember::Device::cpu());
  EXPECT_EQ(ember::Device::parse("Cpu:0"), ember::Device::cpu());
  EXPECT_EQ(ember::Device::parse("REF"), ember::Device::ref());
  EXPECT_EQ(ember::DeviceKind::parse("integratedgpu(1)"), ember::DeviceKind::IntegratedGpu(1));
  const std::vector<std::string> c = ember::device_choices();
  ASSERT_GE(c.size(), 2u);
  EXPECT_EQ(c[0], "cpu");
  EXPECT_EQ(c[1], "ref");
  bool vulkan = false, opencl = false, cuda = false;
  for (const std::string& x : c) {
    vulkan |= x.rfind("vulkan", 0) == 0;
    opencl |= x.rfind("opencl", 0) == 0;
    cuda |= x.rfind("cuda", 0) == 0;
  }
#ifdef EMBER_HAVE_VULKAN
  EXPECT_TRUE(vulkan);
#else
  EXPECT_FALSE(vulkan);
#endif
#ifdef EMBER_HAVE_OPENCL
  EXPECT_TRUE(opencl);
#else
  EXPECT_FALSE(opencl);
#endif
  EXPECT_FALSE(cuda);  // no CUDA backend
  try {
    (void)ember::Device::parse("Bogus");
    FAIL() << "no error";
  } catch (const ember::Error& err) {
    const std::string m = err.what();
    // "cpu or ref" without a GPU backend (the sanitizer build), "cpu, ref, ..." with one.
    EXPECT_NE(m.find(c.size() == 2 ? "unknown device 'Bogus' (expected cpu or ref)"
                                   : "unknown device 'Bogus' (expected cpu, ref, "),
              std::string::npos)
        << m;
    for (const std::string& x : c) EXPECT_NE(m.find(x), std::string::npos) << x << ": " << m;
  }
}

#ifdef EMBER_HAVE_VULKAN
// The bad value is blamed on EMBER_VULKAN_DEFAULT_DEVICE (it was blamed on EMBER_DEVICE, or on
// no variable), whether or not the machine has a Vulkan device: it is parsed first.
TEST(EnvTest, BadVulkanDefaultDeviceNamesItsVariable) {
  EnvGuard e("EMBER_VULKAN_DEFAULT_DEVICE", "Bogus(2)");
  try {
    (void)ember::Device::vulkan();
    FAIL() << "no error";
  } catch (const ember::Error& err) {
    const std::string m = err.what();
    EXPECT_EQ(m.rfind("[device] EMBER_VULKAN_DEFAULT_DEVICE=Bogus(2) does not name a usable "
                      "device: unknown device kind 'Bogus(2)'",
                      0),
              0u)
        << m;
  }
}
#endif

}  // namespace
