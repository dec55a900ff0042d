// EMBER_VULKAN_PROFILE=1: a per-kernel timing log for finding where a workload's device time
// goes. Every op is lowered, recorded, submitted and waited for alone, and its wall time (record
// + submit + run) is added to the row of its kernels' names; lowering (host codegen) time,
// reads/writes and the pipeline cache counts get their own rows. The table is printed to stderr
// at exit. EMBER_VULKAN_PROFILE=2 also splits rows by the shapes of the bound tensors.
// Syncing after every op removes batching, so totals are slightly above an unprofiled run.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

#include "codegen/kernel.h"

namespace ember::vk {

struct CacheStats;

namespace profile {

/// 0 (off), 1 or 2 from EMBER_VULKAN_PROFILE, read once.
int level();
/// The row name of a lowering: its kernels' names joined by '+' (with shapes at level 2).
std::string row(const char* op_name, const codegen::Lowering& l);
/// Adds `seconds` and one call to `row`.
void add(const std::string& row, double seconds);
/// Pipeline cache counts of a device, printed with the table.
void set_cache(int64_t device, const CacheStats& s);

using Clock = std::chrono::steady_clock;
inline double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace profile
}  // namespace ember::vk
