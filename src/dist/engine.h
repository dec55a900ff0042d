// The interface a communication engine implements (MPI, Gloo, one-process; NCCL next). The
// ProcessGroup above it owns the communication thread, checks arguments, moves tensors to
// contiguous host buffers and back, and turns f16/bf16 into f32 for reductions; an engine sees
// only contiguous host buffers of the dtypes it declares it reduces.
#pragma once
#include <cstdint>
#include <string>

#include "ember/dist/dist.h"
#include "ember/dtype.h"

namespace ember::dist {

class ProcessGroup::Engine {
 public:
  virtual ~Engine() = default;
  /// "mpi", "gloo", "local".
  virtual const char* name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int local_rank() const = 0;
  virtual int local_size() const = 0;
  /// Whether all_reduce / reduce_scatter take `dtype` as is (others are converted: f16/bf16 to
  /// f32, bool to u8).
  virtual bool reduces(DType dtype) const = 0;

  // Every call below is blocking and made from the group's one communication thread, in the
  // order the user called the collectives. Each fails by throwing ember::Error naming `op` (the
  // user-facing collective, e.g. "dist::all_reduce"), within timeout_seconds when a peer does
  // not answer. op is never mean (the group divides a sum).

  /// In place over `count` elements.
  virtual void all_reduce(const char* op, void* data, int64_t count, DType dtype, ReduceOp red,
                          double timeout_seconds) = 0;
  virtual void broadcast(const char* op, void* data, int64_t bytes, int root,
                         double timeout_seconds) = 0;
  /// out holds size() blocks of `bytes`, rank r's input in block r.
  virtual void all_gather(const char* op, const void* in, void* out, int64_t bytes,
                          double timeout_seconds) = 0;
  /// in holds size() blocks of `count` elements; out gets block rank() reduced over ranks.
  virtual void reduce_scatter(const char* op, const void* in, void* out, int64_t count, DType dtype,
                              ReduceOp red, double timeout_seconds) = 0;
  virtual void barrier(const char* op, double timeout_seconds) = 0;
  /// Called once after a failure, from the thread that saw it: make the other ranks stop (mpi:
  /// MPI_Abort when the process exits) rather than wait forever. Must not throw. On a timeout
  /// that is the waiting thread, while the communication thread may still be inside a call
  /// above; if that call never returns, the engine is never destroyed (the group leaves the
  /// thread behind when it ends).
  virtual void on_failure() noexcept {}
};

namespace detail {
/// The engines this build has; each throws ember::Error("[dist::init_process_group] ...") when
/// its environment is incomplete or the rendezvous fails. Not built: the factory throws naming
/// the Debian package.
std::unique_ptr<ProcessGroup::Engine> make_mpi_engine(double timeout_seconds);
std::unique_ptr<ProcessGroup::Engine> make_gloo_engine(double timeout_seconds);
std::unique_ptr<ProcessGroup::Engine> make_local_engine();
}  // namespace detail

}  // namespace ember::dist
