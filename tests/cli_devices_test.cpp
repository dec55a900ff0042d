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
