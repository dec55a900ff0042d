// `ember devices` and the device the commands run on (--device, EMBER_DEVICE); tests/cli_util.h.
#include "cli_util.h"

#include <string>

using namespace ember::cli_test;

TEST(CliTestDevices, BadEmberDeviceIsAnErrorOnItsOwnLine) {
  REQUIRE_CLI();
  Result r = run_ember("devices", "EMBER_DEVICE=bogus");
  EXPECT_EQ(r.status, 1) << r.output;
  // The devices are still listed, then the error on a line of its own that names the variable.
  EXPECT_EQ(r.output.rfind("cpu\n", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("\nerror: [device] EMBER_DEVICE=bogus does not name a usable device: "),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("'bogus'"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("default device:"), std::string::npos) << r.output;
  // A good value is listed as the default.
  Result ok = run_ember("devices", "EMBER_DEVICE=ref");
  EXPECT_EQ(ok.status, 0) << ok.output;
  EXPECT_NE(ok.output.find("\ndefault device: ref\n"), std::string::npos) << ok.output;
}

// Without --device the commands run on the library's default device, EMBER_DEVICE (they ran on
// the cpu whatever it said); --device still wins.
TEST(CliTestDevices, EmberDeviceIsTheDefaultWithoutDevice) {
  REQUIRE_FASHION();
  TempDir dir;
  const std::string train =
      "train fashion-mnist --model mlp --limit-train 64 --limit-test 64 --epochs 1 --out ";
  Result r = run_ember(train + (dir / "ref"), "EMBER_DEVICE=ref");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find(" on ref, 1 epoch, batch 64,"), std::string::npos) << r.output;
  EXPECT_EQ(read_json(dir / "ref/summary.json")["device"], "ref");
  Result given = run_ember(train + (dir / "cpu") + " --device cpu", "EMBER_DEVICE=ref");
  ASSERT_EQ(given.status, 0) << given.output;
  EXPECT_EQ(read_json(dir / "cpu/summary.json")["device"], "cpu");
  const std::string model = " --checkpoint " + (dir / "ref/model.safetensors");
  Result e = run_ember("eval" + model, "EMBER_DEVICE=ref");
  ASSERT_EQ(e.status, 0) << e.output;
  EXPECT_NE(e.output.find("(10000 test images), device ref\n"), std::string::npos) << e.output;
  Result plain = run_ember("eval" + model);
  ASSERT_EQ(plain.status, 0) << plain.output;
  EXPECT_NE(plain.output.find("(10000 test images), device cpu\n"), std::string::npos)
      << plain.output;
  // A bad value is a failure naming the variable, for every command.
  for (const std::string& args :
       {train + (dir / "bad"), "eval" + model, "predict" + model + " " + (dir / "x.png")}) {
    Result bad = run_ember(args, "EMBER_DEVICE=bogus");
    EXPECT_EQ(bad.status, 1) << args << ": " << bad.output;
    EXPECT_NE(bad.output.find("error: [device] EMBER_DEVICE=bogus does not name a usable device"),
              std::string::npos)
        << args << ": " << bad.output;
  }
}

// The error names EMBER_VULKAN_DEFAULT_DEVICE and its value (it named EMBER_DEVICE, or no
// variable); the value is parsed before any Vulkan device is looked for.
TEST(CliTestDevices, BadVulkanDefaultDeviceNamesItsVariable) {
  REQUIRE_CLI();
#ifndef EMBER_HAVE_VULKAN
  GTEST_SKIP() << "the Vulkan backend is not built";
#endif
  Result r = run_ember("devices", "EMBER_DEVICE=vulkan EMBER_VULKAN_DEFAULT_DEVICE=Bogus");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("\nerror: [device] EMBER_VULKAN_DEFAULT_DEVICE=Bogus does not name a "
                          "usable device: unknown device kind 'Bogus'"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("EMBER_DEVICE=vulkan"), std::string::npos) << r.output;
}

// Tuning variables with a bad value warn ("warning: [env] ...", naming the default used instead:
// it said "using 256", which read as the value given) and keep their default;
// EMBER_FUSION_LOG=off is off (any value but "0" printed the fusion log).
TEST(CliTestDevices, BadTuningVariablesWarnAndOffMeansOff) {
  REQUIRE_FASHION();
  TempDir dir;
  const std::string train =
      "train fashion-mnist --model mlp --limit-train 64 --limit-test 64 --epochs 1 --out ";
  Result on = run_ember(train + (dir / "on"), "EMBER_FUSION_LOG=ON");
  ASSERT_EQ(on.status, 0) << on.output;
  EXPECT_NE(on.output.find("[ember fusion] cpu: "), std::string::npos) << on.output;
  for (const char* off : {"off", "0", "false", "No"}) {
    Result r = run_ember(train + (dir / off), std::string("EMBER_FUSION_LOG=") + off);
    ASSERT_EQ(r.status, 0) << off << ": " << r.output;
    EXPECT_EQ(r.output.find("[ember fusion]"), std::string::npos) << off << ": " << r.output;
  }
  Result r = run_ember(train + (dir / "bad"),
                       "EMBER_GEMM=bogus EMBER_CPU_KERNELS=bogus "
                       "EMBER_STREAM_OPS=99999999999999999999 EMBER_FUSION=maybe "
                       "EMBER_AUTOTUNE=bogus");
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* w :
       {"warning: [env] EMBER_GEMM=bogus is not one of auto|onednn|openblas; using the default "
        "'auto'\n",
        "warning: [env] EMBER_CPU_KERNELS=bogus is not one of own|ref; using the default 'own'\n",
        "warning: [env] EMBER_STREAM_OPS=99999999999999999999 is not an integer in [1, "
        "1000000]; using the default 256\n",
        "warning: [env] EMBER_FUSION=maybe is not a flag (1/0, on/off, true/false, yes/no); "
        "using the default 'on'\n",
        "warning: [env] EMBER_AUTOTUNE=bogus is not one of off|minimal|balanced|full; using the "
        "default 'balanced'\n"}) {
    const size_t at = r.output.find(w);
    EXPECT_NE(at, std::string::npos) << w << r.output;
    EXPECT_EQ(at, r.output.rfind(w)) << "once: " << w << r.output;
  }
}
