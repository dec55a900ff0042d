// core/atomic_file.h: the one writer behind checkpoints, logs, datasets, images and kernel caches.
#include "core/atomic_file.h"

#include <gtest/gtest.h>

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
