// ember_dist_tests' main: the default process group (from mpirun's environment, or one process
// without a launcher) exists for the whole run. Every rank runs every test; each rank's result
// is its exit status, so mpirun fails when any rank does. Ranks other than 0 print only failures.
#include <gtest/gtest.h>

#include <cstdio>

#include "dist_util.h"

namespace {

class FailurePrinter : public testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const testing::TestPartResult& r) override {
    if (r.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_,
                   r.file_name() ? r.file_name() : "", r.line_number(), r.summary());
  }
  void OnTestEnd(const testing::TestInfo& t) override {
    if (t.result()->Failed())
      std::fprintf(stderr, "[rank %d] FAILED %s.%s\n", rank_, t.test_suite_name(), t.name());
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  ember::dist::init_process_group();
  const int rank = ember::dist::rank();
  if (rank == 0) {
    std::printf("ember_dist_tests: backend %s, %d ranks, devices",
                ember::dist::default_group().backend().c_str(), ember::dist::world_size());
    for (const ember::Device& d : ember::test::dist_util::devices())
      std::printf(" %s", d.str().c_str());
    std::printf("\n");
  }
  if (rank != 0) {
    testing::TestEventListeners& ls = testing::UnitTest::GetInstance()->listeners();
    delete ls.Release(ls.default_result_printer());
    ls.Append(new FailurePrinter(rank));
  }
  const int rc = RUN_ALL_TESTS();
  ember::dist::destroy_process_group();
  return rc;
}
