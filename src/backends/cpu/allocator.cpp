#include "backends/cpu/allocator.h"

#include <sys/mman.h>

#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/env.h"
#include "ember/error.h"
#include "runtime/backend.h"

namespace ember::cpu {

namespace {

constexpr int64_t kHuge = int64_t(2) << 20;  // blocks from this size get 2 MiB pages

// Cached bytes beyond this are freed instead of kept: env EMBER_CPU_CACHE_LIMIT_MB, default 2 GiB.
int64_t cache_limit() {
  static const int64_t v = env_int("EMBER_CPU_CACHE_LIMIT_MB", 2048, 0, int64_t(1) << 30) << 20;
  return v;
}

struct State {
  std::mutex mu;
  std::unordered_map<int64_t, std::vector<void*>> free;  // size class -> cached blocks
  int64_t allocated = 0, cached = 0, peak = 0;
};

State& state() {
  static State* s = new State;  // leaked on purpose (see host_allocator)
  return *s;
}

void* system_alloc(int64_t cls) {
  void* p = std::aligned_alloc(cls >= kHuge ? size_t(kHuge) : 64, size_t(cls));
  if (p && cls >= kHuge) madvise(p, size_t(cls), MADV_HUGEPAGE);
  return p;
}

}  // namespace

int64_t CachingAllocator::size_class(int64_t nbytes) {
  if (nbytes <= 512) return nbytes <= 64 ? 64 : (nbytes + 63) / 64 * 64;
  int64_t p = 1;
  while (p * 2 <= nbytes) p *= 2;
  const int64_t step = p / 4;
  int64_t c = (nbytes + step - 1) / step * step;
  if (c >= kHuge) c = (c + kHuge - 1) / kHuge * kHuge;  // whole huge pages
  return c;
}

void* CachingAllocator::allocate(int64_t nbytes) {
  const int64_t cls = size_class(nbytes);
  State& s = state();
  {
    std::lock_guard<std::mutex> lk(s.mu);
    auto it = s.free.find(cls);
    if (it != s.free.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      s.cached -= cls;
      s.allocated += cls;
      if (s.allocated > s.peak) s.peak = s.allocated;
      return p;
    }
  }
  void* p = system_alloc(cls);
  if (!p) {
    // Out of memory: give the cache back to the system and try once more.
    empty_cache();
    p = system_alloc(cls);
    if (!p) EMBER_FAIL("allocate", "out of host memory allocating ", nbytes, " bytes");
  }
  std::lock_guard<std::mutex> lk(s.mu);
  s.allocated += cls;
  if (s.allocated > s.peak) s.peak = s.allocated;
  return p;
}

void CachingAllocator::deallocate(void* ptr, int64_t nbytes) {
  if (!ptr) return;
  const int64_t cls = size_class(nbytes);
  State& s = state();
  {
    std::lock_guard<std::mutex> lk(s.mu);
    s.allocated -= cls;
    if (s.cached + cls <= cache_limit()) {
      s.free[cls].push_back(ptr);
      s.cached += cls;
      return;
    }
  }
  std::free(ptr);
}

MemoryStats CachingAllocator::stats() const {
  State& s = state();
  std::lock_guard<std::mutex> lk(s.mu);
  MemoryStats m;
  m.allocated = s.allocated;
  m.reserved = s.allocated + s.cached;
  m.peak = s.peak;
  return m;
}

void CachingAllocator::empty_cache() {
  std::vector<void*> blocks;
  State& s = state();
  {
    std::lock_guard<std::mutex> lk(s.mu);
    for (auto& [cls, v] : s.free) blocks.insert(blocks.end(), v.begin(), v.end());
    s.free.clear();
    s.cached = 0;
  }
  for (void* p : blocks) std::free(p);
}

CachingAllocator& host_allocator() {
  static CachingAllocator* a = new CachingAllocator;
  return *a;
}

}  // namespace ember::cpu
