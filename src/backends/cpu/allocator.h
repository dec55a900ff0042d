// The cpu backend's caching host allocator: freed blocks are kept in per-size-class free lists and
// handed out again, so a training step reuses its buffers instead of page-faulting fresh ones.
// Thread-safe. Internal.
#pragma once
#include <cstdint>

#include "ember/device.h"

namespace ember::cpu {

class CachingAllocator {
 public:
  /// A block of at least `nbytes` (64-byte aligned; 2 MiB aligned and huge-page advised when
  /// large).
  void* allocate(int64_t nbytes);
  /// Returns a block from allocate(nbytes) (the same nbytes) to the cache.
  void deallocate(void* ptr, int64_t nbytes);
  MemoryStats stats() const;
  /// Frees every cached block.
  void empty_cache();

  /// The block size a request of `nbytes` gets: 64-byte multiples up to 512 bytes, then four
  /// classes per power of two (at most 25% over).
  static int64_t size_class(int64_t nbytes);
};

/// The allocator of the cpu device (never destroyed: tensors may be freed during static
/// destruction).
CachingAllocator& host_allocator();

}  // namespace ember::cpu
