// core/atomic_file.h: the one writer behind checkpoints, logs, datasets, images and kernel caches.
#include "core/atomic_file.h"

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "ember/error.h"

namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const char* name) {
  const fs::path d = fs::temp_directory_path() /
                     ("ember_atomic_" + std::string(name) + "_" +
                      std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

size_t entries(const fs::path& d) {
  return size_t(std::distance(fs::directory_iterator(d), fs::directory_iterator()));
}

// The signal that raise_mid_write() raises: a write hook is a plain function pointer.
int g_signal = 0;
// In the middle of an atomic write, its temporary there: the signal, as if sent from outside.
void raise_mid_write(const char* temp_path) {
  if (!fs::exists(temp_path)) std::_Exit(3);  // not the situation the test is about
  std::raise(g_signal);
}
// A program's own handler (as ember train's Ctrl-C): it notes the signal and lets the write go on.
volatile std::sig_atomic_t g_seen = 0;
extern "C" void note_signal(int) { g_seen = 1; }

}  // namespace

TEST(AtomicFileTest, WritesAndReplacesLeavingNoTemporary) {
  const fs::path d = fresh_dir("replace");
  const std::string path = (d / "a.bin").string();
  const std::string one("first\0bytes", 11), two = "second";
  ember::write_file_atomic(path, one.data(), one.size(), "test");
  EXPECT_EQ(slurp(path), one);
  ember::write_file_atomic(path, two.data(), two.size(), "test");
  EXPECT_EQ(slurp(path), two);
  ember::write_file_atomic(path, nullptr, 0, "test");
  EXPECT_EQ(slurp(path), "");
  EXPECT_EQ(entries(d), 1u);
  fs::remove_all(d);
}

TEST(AtomicFileTest, FailureNamesOpAndPathAndKeepsTheOldFile) {
  const fs::path d = fresh_dir("fail");
  const std::string missing = (d / "no_such_dir" / "x.bin").string();
  try {
    ember::write_file_atomic(missing, "x", 1, "save_thing");
    FAIL() << "expected an error";
  } catch (const ember::Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("[save_thing]"), std::string::npos) << m;
    EXPECT_NE(m.find(missing), std::string::npos) << m;
  }
  // a folder in the way: rename fails, the folder stays and no temporary is left
  fs::create_directories(d / "taken");
  fs::create_directories(d / "taken" / "inside");
  EXPECT_THROW(ember::write_file_atomic((d / "taken").string(), "x", 1, "t"), ember::Error);
  EXPECT_TRUE(fs::is_directory(d / "taken" / "inside"));
  EXPECT_EQ(entries(d), 1u);
  EXPECT_THROW(ember::write_file_atomic("", "x", 1, "t"), ember::Error);
  fs::remove_all(d);
}

TEST(AtomicFileTest, CacheWriteMakesFoldersAndReportsFailureWithoutThrowing) {
  const fs::path d = fresh_dir("cache");
  const std::string deep = (d / "a" / "b" / "entry").string();
  EXPECT_TRUE(ember::try_write_file_atomic(deep, "abc", 3));
  EXPECT_EQ(slurp(deep), "abc");
  // a regular file where a folder should be
  EXPECT_FALSE(ember::try_write_file_atomic((d / "a" / "b" / "entry" / "sub").string(), "x", 1));
  EXPECT_FALSE(ember::try_write_file_atomic("", "x", 1));
  EXPECT_EQ(slurp(deep), "abc");
  fs::remove_all(d);
}

// A write stopped by SIGINT or SIGTERM leaves neither the file nor its temporary, and the process
// still dies of the signal. In a forked child (death test): the signal is raised in the middle of
// the write, its temporary written and not yet renamed.
TEST(AtomicFileTest, SigintOrSigtermDuringAWriteRemovesTheTemporary) {
  GTEST_FLAG_SET(death_test_style, "fast");  // the child writes to this process's folder
  for (int sig : {SIGINT, SIGTERM}) {
    const fs::path d = fresh_dir(sig == SIGINT ? "sigint" : "sigterm");
    const std::string path = (d / "a.bin").string();
    const std::string big(1 << 20, 'x');
    EXPECT_EXIT(
        {
          std::signal(sig, SIG_DFL);  // a shell may start tests with SIGINT ignored
          g_signal = sig;
          ember::detail::set_atomic_write_hook(raise_mid_write);
          ember::write_file_atomic(path, big.data(), big.size(), "test");
          std::_Exit(0);
        },
        ::testing::KilledBySignal(sig), "");
    EXPECT_EQ(entries(d), 0u) << "signal " << sig;
    fs::remove_all(d);
  }
  // The handler is there only during writes: after one, the disposition is what it was.
  struct sigaction before {
  }, after{};
  ::sigaction(SIGTERM, nullptr, &before);
  const fs::path d = fresh_dir("after");
  ember::write_file_atomic((d / "a.bin").string(), "a", 1, "test");
  ::sigaction(SIGTERM, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
  fs::remove_all(d);
}

// A temporary kept after its write (onnx::save's check file) is removed the same way while its
// guard lives, and kept once the guard is gone (renamed or removed by its owner by then).
TEST(AtomicFileTest, RemoveOnSignalGuardsAFileWhileItLives) {
  GTEST_FLAG_SET(death_test_style, "fast");
  const fs::path d = fresh_dir("guard");
  const std::string guarded = (d / "guarded").string(), released = (d / "released").string();
  EXPECT_EXIT(
      {
        std::signal(SIGTERM, SIG_DFL);
        { const ember::RemoveOnSignal g(released); }
        ember::write_file_atomic(released, "r", 1, "test");
        const ember::RemoveOnSignal g(guarded);
        ember::write_file_atomic(guarded, "g", 1, "test");
        std::raise(SIGTERM);
        std::_Exit(0);
      },
      ::testing::KilledBySignal(SIGTERM), "");
  EXPECT_FALSE(fs::exists(guarded));
  EXPECT_EQ(slurp(released), "r");
  EXPECT_EQ(entries(d), 1u);
  fs::remove_all(d);
}

// A signal the program handles itself is left to it: the write goes on and completes.
TEST(AtomicFileTest, SignalWithTheProgramsOwnHandlerLetsTheWriteComplete) {
  const fs::path d = fresh_dir("handled");
  const std::string path = (d / "a.bin").string();
  struct sigaction sa {
  }, old{};
  sa.sa_handler = note_signal;
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(::sigaction(SIGINT, &sa, &old), 0);
  g_seen = 0;
  g_signal = SIGINT;
  ember::detail::set_atomic_write_hook(raise_mid_write);
  ember::write_file_atomic(path, "abc", 3, "test");
  ember::detail::set_atomic_write_hook(nullptr);
  struct sigaction now {};
  ::sigaction(SIGINT, &old, &now);
  EXPECT_EQ(g_seen, 1);
  EXPECT_EQ(now.sa_handler, note_signal);
  EXPECT_EQ(slurp(path), "abc");
  EXPECT_EQ(entries(d), 1u);
  fs::remove_all(d);
}
