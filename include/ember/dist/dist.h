// ember::dist: a process group and its collectives, for data-parallel training across processes
// and machines (as torch.distributed). docs/distributed.md has the picture.
//
//   dist::init_process_group();            // from mpirun's or torchrun-style environment
//   Tensor g = ...;                        // any dtype, any device
//   dist::all_reduce(g, dist::ReduceOp::mean);
//   dist::Work w = dist::all_reduce(g, dist::ReduceOp::sum, /*async_op=*/true);
//   ... other work ...
//   w.wait();                              // g holds the sum on every rank
//
// Engines (where the bytes travel; none is Ember's own transport):
//   "mpi"   Open MPI (Debian libopenmpi-dev), for processes started by mpirun / `ember train
//           --nproc N`: shared memory between the processes of one machine, TCP (or whatever the
//           MPI has) between machines.
//   "gloo"  Gloo (Debian libgloo-dev) over TCP, for processes started with torchrun-style
//           environment variables RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (LOCAL_RANK and
//           LOCAL_WORLD_SIZE optional); rank 0 serves the rendezvous on MASTER_ADDR:MASTER_PORT.
//   "local" one process (world size 1): every collective is the identity (mean, max, min of one
//           value), so the same program runs without a launcher.
//   NCCL joins as one more engine with the CUDA backend (docs/distributed.md).
//
// Semantics follow torch.distributed: collectives are called by every rank in the same order
// with tensors of the same shape and dtype; they write their results in place; async_op returns
// a Work to wait on (the tensors must not be used before). Tensors may be of any dtype (f16 and
// bf16 are reduced in f32 and rounded once) and on any device (non-host tensors go through a host
// copy; NCCL will reduce on the device), contiguous or not.
//
// Faults: a collective whose peers do not answer within the group's timeout throws
// ember::Error("[dist::all_reduce] timed out after 30 s waiting for the other ranks ...");
// a peer that dies makes the others throw (gloo: its connection closes) or stop (mpi: mpirun
// ends the job). After a failure the group is broken: every later collective throws at once,
// and with mpi the process ends the whole job (MPI_Abort) when it exits, so no rank hangs.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ember/tensor.h"

namespace ember::dist {

/// How all_reduce / reduce_scatter combine: mean is the sum divided by the world size (torch's
/// ReduceOp.AVG; floating dtypes only). On bool, sum and max are logical or, min logical and.
enum class ReduceOp { sum, mean, max, min };
/// "sum", "mean", "max", "min".
const char* reduce_op_name(ReduceOp op);

/// The handle of an async collective (torch's Work). wait() blocks until the op has completed on
/// this rank, so its output tensors hold the result, and rethrows its failure (ember::Error
/// naming the op). Waiting again does nothing. A default Work is complete. Destroying a Work
/// that was not waited on waits for it (and drops its error: the group is then broken).
class Work {
 public:
  struct State;
  Work() = default;
  explicit Work(std::shared_ptr<State> s) : s_(std::move(s)) {}
  ~Work();
  Work(Work&&) noexcept = default;
  Work& operator=(Work&&) noexcept;
  Work(const Work&) = delete;
  Work& operator=(const Work&) = delete;
  /// Blocks until done; throws the op's ember::Error.
  void wait();
  /// Whether the op has finished (successfully or not) without blocking.
  bool is_completed() const;

 private:
  std::shared_ptr<State> s_;
};

struct InitOptions {
  /// "auto" (env EMBER_DIST_BACKEND when set): "mpi" when started by mpirun (OMPI_COMM_WORLD_SIZE
  /// is set), "gloo" when WORLD_SIZE is set, "local" otherwise. Or "mpi", "gloo", "local".
  std::string backend = "auto";
  /// Seconds a collective, the barrier and the rendezvous wait for the other ranks before they
  /// fail (torch's timeout). <= 0: env EMBER_DIST_TIMEOUT when set, else 300.
  double timeout_seconds = 0;
  /// When neither EMBER_NUM_THREADS nor OMP_NUM_THREADS is set, sets the cpu backend's threads
  /// to max(1, hardware threads / processes on this machine) so ranks sharing a machine do not
  /// oversubscribe its cores.
  bool set_threads = true;
};

/// One process group (torch's ProcessGroup): the ranks, their engine and a communication thread
/// that runs the collectives in the order they were called, so async ops overlap with compute.
class ProcessGroup {
 public:
  class Engine;  // src/dist/engine.h: the interface MPI, Gloo (and NCCL) implement
  explicit ProcessGroup(std::unique_ptr<Engine> engine, double timeout_seconds);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  /// "mpi", "gloo" or "local".
  std::string backend() const;
  int rank() const;
  int world_size() const;
  /// This process's index among the ranks on its machine, and their number.
  int local_rank() const;
  int local_world_size() const;
  double timeout_seconds() const;
  /// Whether an earlier collective failed (every later one throws).
  bool broken() const;

  /// Combines `tensor` over all ranks, in place. Throws ember::Error("[dist::all_reduce] ...")
  /// for an undefined tensor, mean on a non-floating dtype, and failures (see the top).
  Work all_reduce(const Tensor& tensor, ReduceOp op = ReduceOp::sum, bool async_op = false);
  /// Copies rank `src`'s tensor into every rank's `tensor` (same shape and dtype). Throws for
  /// src outside [0, world_size).
  Work broadcast(const Tensor& tensor, int src, bool async_op = false);
  /// outputs[r] = rank r's input; outputs has world_size tensors of input's shape and dtype.
  Work all_gather(const std::vector<Tensor>& outputs, const Tensor& input, bool async_op = false);
  /// output = the ranks' inputs concatenated along dim 0: output.shape[0] = world_size *
  /// input.shape[0] (torch's all_gather_into_tensor).
  Work all_gather_into_tensor(const Tensor& output, const Tensor& input, bool async_op = false);
  /// output = op over ranks of their inputs[rank()]; inputs has world_size tensors of output's
  /// shape and dtype.
  Work reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                      ReduceOp op = ReduceOp::sum, bool async_op = false);
  /// Rank r gets slice r (along dim 0) of the op over ranks of `input`: input.shape[0] =
  /// world_size * output.shape[0] (torch's reduce_scatter_tensor).
  Work reduce_scatter_tensor(const Tensor& output, const Tensor& input, ReduceOp op = ReduceOp::sum,
                             bool async_op = false);
  /// Returns once every rank has called it (or throws after the timeout).
  void barrier();
  /// Marks this rank failed, for a program's top-level error handler before it exits with an
  /// error: the group breaks as after a failed collective, so its engine makes the other ranks
  /// stop instead of waiting for this one (mpi: the job is aborted when this process exits;
  /// gloo: its connections close, and the others' collectives fail at once naming `reason`).
  /// Does nothing when the group is already broken.
  void abort(const std::string& reason);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// Creates the default group (see InitOptions and the engines above). Throws ember::Error
/// ("[dist::init_process_group] ...") when it already exists, the launcher's environment is
/// incomplete or malformed (the error names the variable), the engine was not built (its Debian
/// package is named), or the rendezvous times out.
void init_process_group(const InitOptions& options = {});
/// Whether the default group exists.
bool is_initialized();
/// Ends the default group (waits for its pending ops); a later init_process_group makes a new one
/// (not for mpi: MPI cannot be initialized twice in one process).
void destroy_process_group();
/// default_group().abort(reason) when the default group exists; nothing otherwise.
void abort_process_group(const std::string& reason);
/// Whether `backend` ("mpi", "gloo", "local") was built into this Ember.
bool is_available(const std::string& backend);
/// The default group; throws ember::Error("[dist] ... call dist::init_process_group() first").
ProcessGroup& default_group();

/// The default group's rank / world size, or 0 / 1 when there is none (as Lightning's helpers).
int rank();
int world_size();
int local_rank();
int local_world_size();

/// The default group's collectives (ProcessGroup's, above).
Work all_reduce(const Tensor& tensor, ReduceOp op = ReduceOp::sum, bool async_op = false);
Work broadcast(const Tensor& tensor, int src, bool async_op = false);
Work all_gather(const std::vector<Tensor>& outputs, const Tensor& input, bool async_op = false);
Work all_gather_into_tensor(const Tensor& output, const Tensor& input, bool async_op = false);
Work reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                    ReduceOp op = ReduceOp::sum, bool async_op = false);
Work reduce_scatter_tensor(const Tensor& output, const Tensor& input, ReduceOp op = ReduceOp::sum,
                           bool async_op = false);
void barrier();

}  // namespace ember::dist
