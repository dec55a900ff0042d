// The one-process engine: every collective over a world of one is a copy at most.
#include <cstring>

#include "dist/engine.h"

namespace ember::dist::detail {

namespace {

class LocalEngine final : public ProcessGroup::Engine {
 public:
  const char* name() const override { return "local"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }
  bool reduces(DType) const override { return true; }

  void all_reduce(const char*, void*, int64_t, DType, ReduceOp, double) override {}
  void broadcast(const char*, void*, int64_t, int, double) override {}
  void all_gather(const char*, const void* in, void* out, int64_t bytes, double) override {
    if (bytes > 0) std::memcpy(out, in, size_t(bytes));
  }
  void reduce_scatter(const char*, const void* in, void* out, int64_t count, DType dtype, ReduceOp,
                      double) override {
    if (count > 0) std::memcpy(out, in, size_t(count) * size_t(dtype_size(dtype)));
  }
  void barrier(const char*, double) override {}
};

}  // namespace

std::unique_ptr<ProcessGroup::Engine> make_local_engine() {
  return std::make_unique<LocalEngine>();
}

}  // namespace ember::dist::detail
