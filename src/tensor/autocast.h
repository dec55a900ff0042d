// Autocast's per-op policies for the frontends (ember/autocast.h has the lists). Internal.
// A listed op calls one of these at entry; when autocast is on for its device it gets its inputs
// cast and runs its body under Suspend, so the ops it is built from are not cast again.
#pragma once
#include "ember/autocast.h"
#include "ember/tensor.h"

namespace ember::detail::amp {

/// Whether autocast is on for `d`'s device type and not suspended on this thread.
bool active(const Device& d);
/// The low-precision dtype set for `d`'s device type.
DType low_dtype(const Device& d);

/// Autocast off on this thread while alive (listed ops' bodies, backward passes).
class Suspend {
 public:
  Suspend();
  ~Suspend();
  Suspend(const Suspend&) = delete;
  Suspend& operator=(const Suspend&) = delete;
};

}  // namespace ember::detail::amp
