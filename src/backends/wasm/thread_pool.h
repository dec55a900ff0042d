// The wasm cpu backend's threads. Built with -pthread (__EMSCRIPTEN_PTHREADS__): a persistent
// pool of std::thread workers, created when first needed and kept; the calling thread takes a
// share of every parallel_for and claims chunks itself, so a parallel_for finishes even when no
// worker has started (a page's main thread must not block waiting for one). Single-threaded
// build: parallel_for runs inline. Internal.
#pragma once
#include <cstdint>
#include <functional>

#include "backends/wasm/wasm_backend.h"

namespace ember::wasm {

/// Calls fn(b, e) over disjoint sub-ranges covering [0, n), each at least `grain` long (except
/// when the whole range is shorter), on up to num_threads() threads. Each range is one call;
/// results must not depend on how the range is split. A parallel_for issued from inside one, or
/// while another thread runs one, runs inline. The first exception fn throws is rethrown.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

/// Items per chunk for cheap element-wise work.
inline constexpr int64_t kGrainElementwise = 16384;

}  // namespace ember::wasm
