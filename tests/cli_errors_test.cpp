// `ember` usage errors and exit statuses: the same for every command (tests/cli_util.h).
#include "cli_util.h"

#include <string>
#include <utility>
#include <vector>

using namespace ember::cli_test;

TEST(CliTest, HelpForEveryCommand) {
  REQUIRE_CLI();
  for (const char* c : {"", "train ", "eval ", "predict ", "devices "}) {
    Result r = run_ember(std::string(c) + "--help");
    EXPECT_EQ(r.status, 0) << c << r.output;
    EXPECT_NE(r.output.find("Usage"), std::string::npos) << c << r.output;
  }
  Result t = run_ember("train --help");
  for (const char* opt :
       {"--model", "--epochs", "--batch-size", "--lr", "--device", "--out", "--resume", "--data",
        "--workers", "--seed", "--limit-train", "--precision"})
    EXPECT_NE(t.output.find(opt), std::string::npos) << opt;
}

TEST(CliTest, UsageErrorsExitWithTwo) {
  REQUIRE_CLI();
  Result r = run_ember("train cifar10");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(r.output.rfind("error: ", 0), 0u) << r.output;
  EXPECT_EQ(run_ember("train fashion-mnist --model resnet").status, 2);
  EXPECT_EQ(run_ember("").status, 2);
  // An explicit 0 or negative epoch count is a usage error, not the default.
  for (const char* e : {"0", "-1"}) {
    Result bad = run_ember(std::string("train fashion-mnist --limit-train 64 --epochs ") + e);
    EXPECT_EQ(bad.status, 2) << bad.output;
    EXPECT_EQ(
        bad.output.rfind(
            std::string("error: --epochs: value ") + e + " is out of range (must be >= 1)\n", 0),
        0u)
        << bad.output;
  }
}

TEST(CliTest, UnknownOptionIsNamed) {
  REQUIRE_CLI();
  // CLI11 reported the missing command or dataset instead ("A subcommand is required").
  for (const char* args : {"--frob", "train --frob", "train fashion-mnist --frob", "eval --frob"}) {
    Result r = run_ember(args);
    EXPECT_EQ(r.status, 2) << args << ": " << r.output;
    EXPECT_EQ(r.output.rfind("error: ", 0), 0u) << args << ": " << r.output;
    EXPECT_NE(r.output.find("not expected: --frob"), std::string::npos) << args << ": " << r.output;
  }
}

TEST(CliTest, TestOnlyFlagIsHiddenFromHelpButAccepted) {
  REQUIRE_CLI();
  Result h = run_ember("train --help");
  EXPECT_EQ(h.status, 0) << h.output;
  EXPECT_NE(h.output.find("--limit-test"), std::string::npos) << h.output;
  EXPECT_EQ(h.output.find("--interrupt-after"), std::string::npos) << h.output;
  // Still parsed: the run gets as far as checking --epochs.
  Result r = run_ember("train fashion-mnist --interrupt-after 3 --epochs 0");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--epochs: value 0 is out of range"), std::string::npos) << r.output;
}

TEST(CliTest, IntegersOutOfRangeAreUsageErrorsNamingTheFlag) {
  REQUIRE_CLI();
  // CLI11 clamped these to INT64_MAX / UINT64_MAX or wrapped -1 to 2^64 - 1.
  for (const char* args :
       {"--epochs 99999999999999999999", "--epochs -99999999999999999999",
        "--seed 99999999999999999999", "--seed 18446744073709551616", "--seed -1",
        "--batch-size 9223372036854775808", "--limit-train 1e3", "--epochs 3x"}) {
    Result r = run_ember(std::string("train fashion-mnist ") + args);
    const std::string flag = std::string(args).substr(0, std::string(args).find(' '));
    EXPECT_EQ(r.status, 2) << args << ": " << r.output;
    EXPECT_EQ(r.output.rfind("error: " + flag + ": value ", 0), 0u) << args << ": " << r.output;
  }
  Result e = run_ember("eval --checkpoint x --batch-size 99999999999999999999");
  EXPECT_EQ(e.status, 2) << e.output;
  EXPECT_NE(e.output.find("--batch-size: value 99999999999999999999 is out of range"),
            std::string::npos)
      << e.output;
  // The ends of the ranges are accepted, read as decimal: the run gets as far as loading the
  // data (from a folder that does not exist).
  for (const char* args : {"--seed 18446744073709551615", "--seed 0", "--workers 010",
                           "--workers 256", "--batch-size 9223372036854775807"}) {
    Result r = run_ember(std::string("train fashion-mnist --data /nonexistent-ember ") + args);
    EXPECT_EQ(r.status, 1) << args << ": " << r.output;
    EXPECT_EQ(r.output.rfind("error: [", 0), 0u) << args << ": " << r.output;
    EXPECT_NE(r.output.find("/nonexistent-ember"), std::string::npos) << args << r.output;
  }
  Result low = run_ember("train fashion-mnist --epochs -9223372036854775808");
  EXPECT_EQ(low.status, 2) << low.output;
  EXPECT_NE(low.output.find("--epochs: value -9223372036854775808 is out of range (must be >= 1)"),
            std::string::npos)
      << low.output;
  // --workers near 2^63 started threads until the system gave out: refused.
  for (const char* w : {"9223372036854775807", "257"}) {
    Result r = run_ember(std::string("train fashion-mnist --workers ") + w);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_EQ(
        r.output.rfind(
            std::string("error: --workers: value ") + w + " is out of range (must be 0 to 256)", 0),
        0u)
        << r.output;
  }
}

TEST(CliTest, ExitStatusesAndMessagesAreTheSameForEveryCommand) {
  REQUIRE_CLI();
  // Usage errors: status 2, "error: <what>" and the pointer to --help, on every command.
  for (const char* args :
       {"train fashion-mnist --device nonsense", "train fashion-mnist --lr 0",
        "train fashion-mnist --lr abc", "train fashion-mnist --limit-test -1", "eval",
        "eval --checkpoint x --device nonsense", "eval --checkpoint x --batch-size 0",
        "predict --checkpoint x", "predict --checkpoint x y.png --device vulkan:Bogus",
        "predict --checkpoint x y.png --dataset cifar", "devices extra",
        "eval --checkpoint x --device cpu:1"}) {
    Result r = run_ember(args);
    EXPECT_EQ(r.status, 2) << args << ": " << r.output;
    EXPECT_EQ(r.output.rfind("error: ", 0), 0u) << args << ": " << r.output;
    EXPECT_EQ(r.output.rfind("error: [", 0), std::string::npos) << args << ": " << r.output;
    EXPECT_NE(r.output.find("\nRun with --help for more information.\n"), std::string::npos)
        << args << ": " << r.output;
  }
  Result dev = run_ember("train fashion-mnist --device nonsense");
  EXPECT_NE(dev.output.find("--device: unknown device 'nonsense' (expected cpu, ref"),
            std::string::npos)
      << dev.output;
  // cpu:0 is the cpu, as torch.device("cpu:0"): past the parser, the missing file is the error.
  Result cpu0 = run_ember("eval --checkpoint x.safetensors --device cpu:0");
  EXPECT_EQ(cpu0.status, 1) << cpu0.output;
  Result cpu1 = run_ember("eval --checkpoint x --device cpu:1");
  EXPECT_NE(cpu1.output.find("--device: 'cpu:1': the cpu backend has one device, index 0"),
            std::string::npos)
      << cpu1.output;
  Result lr = run_ember("train fashion-mnist --lr 0");
  EXPECT_NE(lr.output.find("--lr: value 0 is out of range (must be a finite number > 0)"),
            std::string::npos)
      << lr.output;
  // Failures: status 1 and one line "error: [tag] <what>", the tag naming where it failed.
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> failures = {
      {"train fashion-mnist --data " + (dir / "none"), ""},
      {"eval --checkpoint " + (dir / "none.safetensors"), ""},
      {"predict --checkpoint " + (dir / "none.safetensors") + " " + (dir / "x.png"), ""},
      {"devices", "EMBER_DEVICE=bogus"}};
  for (const auto& [args, env] : failures) {
    Result r = run_ember(args, env);
    EXPECT_EQ(r.status, 1) << args << ": " << r.output;
    const size_t at = r.output.find("error: [");
    ASSERT_NE(at, std::string::npos) << args << ": " << r.output;
    EXPECT_TRUE(at == 0 || r.output[at - 1] == '\n') << args << ": " << r.output;
    EXPECT_EQ(r.output.find("Run with --help"), std::string::npos) << args << ": " << r.output;
  }
  // The statuses are documented in --help.
  Result help = run_ember("--help");
  EXPECT_EQ(help.status, 0);
  for (const char* s : {"Exit status", "  0    success", "  1    the command failed",
                        "  2    usage error", "  130  `ember train` was interrupted"})
    EXPECT_NE(help.output.find(s), std::string::npos) << s << "\n" << help.output;
}

// Every numeric option of every command: a value that is not a number, negative, zero where that
// means nothing, or past a sane bound is a usage error (status 2) naming the option, before any
// data is read. --valid-fraction 1.5 failed later with status 1; --image-size 100000 tried to
// allocate 144 GB.
TEST(CliTest, NumericOptionsOutOfRangeAreUsageErrors) {
  REQUIRE_CLI();
  struct Case {
    const char* args;
    const char* message;
  };
  const Case cases[] = {
      {"train --data x --valid-fraction 1.5",
       "--valid-fraction: value 1.5 is out of range (must be > 0 and < 1)"},
      {"train --data x --valid-fraction 1",
       "--valid-fraction: value 1 is out of range (must be > 0 and < 1)"},
      {"train --data x --valid-fraction 0",
       "--valid-fraction: value 0 is out of range (must be > 0 and < 1)"},
      {"train --data x --valid-fraction -0.2",
       "--valid-fraction: value -0.2 is out of range (must be > 0 and < 1)"},
      {"train --data x --valid-fraction nan",
       "--valid-fraction: value nan is out of range (must be > 0 and < 1)"},
      {"train --data x --valid-fraction 0.2x", "--valid-fraction: value 0.2x is not a number"},
      {"train --data x --image-size 100000",
       "--image-size: value 100000 is out of range (must be 1 to 4096)"},
      {"train --data x --image-size 4097",
       "--image-size: value 4097 is out of range (must be 1 to 4096)"},
      {"train --data x --image-size 0",
       "--image-size: value 0 is out of range (must be 1 to 4096)"},
      {"train --data x --image-size -8",
       "--image-size: value -8 is out of range (must be 1 to 4096)"},
      {"train --data x --image-size big", "--image-size: value big is not an integer"},
      {"train --data x --channels 0", "--channels: must be 1 or 3, got 0"},
      {"train --data x --channels three", "--channels: value three is not an integer"},
      {"train fashion-mnist --lr inf",
       "--lr: value inf is out of range (must be a finite number > 0)"},
      {"train fashion-mnist --lr -0.1",
       "--lr: value -0.1 is out of range (must be a finite number > 0)"},
      {"train fashion-mnist --lr 1e400",
       "--lr: value 1e400 is out of range (must be a finite number > 0)"},
      {"train fashion-mnist --batch-size 0",
       "--batch-size: value 0 is out of range (must be >= 1)"},
      {"train fashion-mnist --epochs x", "--epochs: value x is not an integer"},
      {"train fashion-mnist --workers -1",
       "--workers: value -1 is out of range (must be 0 to 256)"},
      {"train fashion-mnist --limit-train -1",
       "--limit-train: value -1 is out of range (must be >= 0)"},
      {"train fashion-mnist --limit-test -5",
       "--limit-test: value -5 is out of range (must be >= 0)"},
      {"train fashion-mnist --interrupt-after -1",
       "--interrupt-after: value -1 is out of range (must be >= 0)"},
      {"train fashion-mnist --seed x", "--seed: value x is not a non-negative integer"},
      {"train fashion-mnist --max-image-pixels -1",
       "--max-image-pixels: value -1 is out of range (must be >= 0)"},
      {"eval --checkpoint x --batch-size -3",
       "--batch-size: value -3 is out of range (must be >= 1)"},
      {"eval --checkpoint x --max-image-pixels 1.5",
       "--max-image-pixels: value 1.5 is not an integer"},
      {"predict --checkpoint x y.png --max-image-pixels -1",
       "--max-image-pixels: value -1 is out of range (must be >= 0)"},
  };
  for (const Case& c : cases) {
    Result r = run_ember(c.args);
    EXPECT_EQ(r.status, 2) << c.args << ": " << r.output;
    EXPECT_EQ(r.output.rfind(std::string("error: ") + c.message + "\n", 0), 0u)
        << c.args << ": " << r.output;
  }
  // The ends of the ranges are accepted: the run gets as far as the (missing) folder.
  for (const char* args : {"--image-size 4096", "--image-size 1", "--valid-fraction 0.999"}) {
    Result r = run_ember(std::string("train --data /nonexistent-ember ") + args);
    EXPECT_EQ(r.status, 1) << args << ": " << r.output;
    EXPECT_NE(r.output.find("/nonexistent-ember"), std::string::npos) << args << ": " << r.output;
  }
}

// --device and EMBER_DEVICE list the same choices, ember::device_choices(), and match in any
// case; a backend this build lacks fails at option parsing, naming it.
TEST(CliTest, DeviceChoicesAreTheSameForTheOptionAndTheVariable) {
  REQUIRE_CLI();
  Result opt = run_ember("eval --checkpoint x --device bogus");
  EXPECT_EQ(opt.status, 2) << opt.output;
  Result env = run_ember("devices", "EMBER_DEVICE=bogus");
  EXPECT_EQ(env.status, 1) << env.output;
  const auto choices = [](const std::string& out) {
    const size_t at = out.find("'bogus' (expected ");
    if (at == std::string::npos) return std::string("(none)");
    const size_t from = at + 18;
    return out.substr(from, out.find_first_of(";)", from) - from);
  };
  EXPECT_EQ(choices(opt.output), choices(env.output)) << opt.output << env.output;
  EXPECT_EQ(choices(opt.output).rfind("cpu, ref", 0), 0u) << opt.output;
  // In any case: past the parser, the missing checkpoint is the error.
  for (const char* d : {"CPU", "Cpu:0", "REF"}) {
    Result r = run_ember(std::string("eval --checkpoint x.safetensors --device ") + d);
    EXPECT_EQ(r.status, 1) << d << ": " << r.output;
  }
  Result up = run_ember("devices", "EMBER_DEVICE=CPU");
  EXPECT_EQ(up.status, 0) << up.output;
  EXPECT_NE(up.output.find("\ndefault device: cpu\n"), std::string::npos) << up.output;
  Result cuda = run_ember("eval --checkpoint x --device cuda:0");
  EXPECT_EQ(cuda.status, 2) << cuda.output;
  EXPECT_EQ(cuda.output.rfind("error: --device: backend cuda is not built", 0), 0u) << cuda.output;
}

// An integer past the type's range states the option's range (it said the int64 range).
TEST(CliTest, OverflowStatesTheOptionsRange) {
  REQUIRE_CLI();
  Result r = run_ember("train fashion-mnist --epochs 99999999999999999999");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(r.output.rfind("error: --epochs: value 99999999999999999999 is out of range (must be "
                           ">= 1)\n",
                           0),
            0u)
      << r.output;
  Result w = run_ember("train fashion-mnist --workers 99999999999999999999");
  EXPECT_EQ(w.status, 2) << w.output;
  EXPECT_NE(w.output.find("(must be 0 to 256)"), std::string::npos) << w.output;
}

// A single-value option given twice is a usage error (CLI11 said "At Most 1 required").
TEST(CliTest, OptionGivenTwiceIsAUsageError) {
  REQUIRE_CLI();
  for (const auto& [args, name] : std::vector<std::pair<std::string, std::string>>{
           {"train fashion-mnist --epochs 2 --epochs 3", "--epochs"},
           {"train fashion-mnist --epochs 2 --epochs 0", "--epochs"},
           {"train fashion-mnist --out a --out b", "--out"},
           {"eval --checkpoint a --checkpoint b", "--checkpoint"},
           {"eval --checkpoint a --device cpu --device ref", "--device"}}) {
    Result r = run_ember(args);
    EXPECT_EQ(r.status, 2) << args << ": " << r.output;
    EXPECT_EQ(r.output.rfind("error: " + name + " given more than once", 0), 0u)
        << args << ": " << r.output;
  }
}

// An empty path is refused, naming the option (it read as the option not given).
TEST(CliTest, EmptyPathsAreUsageErrors) {
  REQUIRE_CLI();
  for (const auto& [args, name] : std::vector<std::pair<std::string, std::string>>{
           {"train fashion-mnist --data ''", "--data"},
           {"train fashion-mnist --out ''", "--out"},
           {"eval --checkpoint ''", "--checkpoint"},
           {"eval --checkpoint x --data ''", "--data"},
           {"predict --checkpoint '' x.png", "--checkpoint"},
           {"predict --checkpoint x ''", "image"}}) {
    Result r = run_ember(args);
    EXPECT_EQ(r.status, 2) << args << ": " << r.output;
    EXPECT_EQ(r.output.rfind("error: " + name + ": the path is empty", 0), 0u)
        << args << ": " << r.output;
  }
}
