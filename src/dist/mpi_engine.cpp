// The MPI engine (Open MPI, Debian libopenmpi-dev): processes started by mpirun. MPI is
// initialized and finalized on the thread that makes the group; the collectives run on the
// group's communication thread (MPI_THREAD_SERIALIZED: never two calls at once). Timeouts are
// the waiter's (ProcessGroup): a blocking call here may never return when a peer hangs, so after
// a failure the process ends the whole job with MPI_Abort when it exits.
// The C API only (Open MPI's mpi.h also declares the C++ bindings, which need libmpi_cxx).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <atomic>
#include <climits>
#include <cstdio>
#include <cstdlib>

#include "core/env.h"
#include "dist/engine.h"
#include "ember/error.h"

namespace ember::dist::detail {

namespace {

constexpr const char* kInit = "dist::init_process_group";

std::atomic<bool> g_failed{false};     // a collective failed: abort the job at exit
std::atomic<bool> g_finalized{false};  // MPI_Finalize ran: MPI cannot start again

void abort_job_if_failed() {
  if (!g_failed) return;
  std::fflush(stdout);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, size_t(len));
}

void check(const char* op, const char* call, int rc) {
  if (rc != MPI_SUCCESS) EMBER_FAIL(op, call, " failed: ", mpi_error(rc));
}

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::f32:
      return MPI_FLOAT;
    case DType::f64:
      return MPI_DOUBLE;
    case DType::i8:
      return MPI_INT8_T;
    case DType::i16:
      return MPI_INT16_T;
    case DType::i32:
      return MPI_INT32_T;
    case DType::i64:
      return MPI_INT64_T;
    case DType::u8:
      return MPI_UINT8_T;
    case DType::u16:
      return MPI_UINT16_T;
    case DType::u32:
      return MPI_UINT32_T;
    case DType::u64:
      return MPI_UINT64_T;
    default:
      return MPI_DATATYPE_NULL;  // f16, bf16, bool: the group converts them
  }
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::max:
      return MPI_MAX;
    case ReduceOp::min:
      return MPI_MIN;
    default:
      return MPI_SUM;  // mean is a sum the group divides
  }
}

// `bytes` bytes followed by a gap up to `stride_bytes`: one rank's slice of a chunk inside a
// buffer of world blocks (freed by the caller).
MPI_Datatype strided_bytes(const char* op, int bytes, int64_t stride_bytes) {
  MPI_Datatype block, resized;
  check(op, "MPI_Type_contiguous", MPI_Type_contiguous(bytes, MPI_BYTE, &block));
  check(op, "MPI_Type_create_resized",
        MPI_Type_create_resized(block, 0, MPI_Aint(stride_bytes), &resized));
  MPI_Type_free(&block);
  check(op, "MPI_Type_commit", MPI_Type_commit(&resized));
  return resized;
}

bool env_set(const char* name) { return std::getenv(name) != nullptr; }

// Open MPI settings of Ember's, read by MPI_Init (the user's environment and mpirun's --mca win):
// - all_reduce as a ring: 7.5 GB/s on 40 MB f32 between 2 local processes, against 2.8 GB/s
//   for Open MPI 4.1's default choice at that size (Rabenseifner's) and ~1.4 for PyTorch's gloo
//   (bench/bench_allreduce.sh, 2-core EPYC); for small messages the two take the same time;
// - yield while idle: the communication thread waits for its peers on cores it shares with the
//   compute threads, which Open MPI does not count when it decides whether it is oversubscribed.
void default_mca_settings() {
  if (!env_set("OMPI_MCA_coll_tuned_use_dynamic_rules") &&
      !env_set("OMPI_MCA_coll_tuned_allreduce_algorithm") &&
      !env_set("OMPI_MCA_coll_tuned_dynamic_rules_filename")) {
    setenv("OMPI_MCA_coll_tuned_use_dynamic_rules", "1", 0);
    setenv("OMPI_MCA_coll_tuned_allreduce_algorithm", "4", 0);  // ring
  }
  setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
}

class MpiEngine final : public ProcessGroup::Engine {
 public:
  MpiEngine() {
    if (g_finalized)
      EMBER_FAIL(kInit,
                 "MPI was finalized when the last mpi process group ended; MPI cannot "
                 "be initialized twice in one process");
    int initialized = 0;
    MPI_Initialized(&initialized);
    int provided = MPI_THREAD_SINGLE;
    if (!initialized) {
      default_mca_settings();
      check(kInit, "MPI_Init_thread",
            MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided));
      owns_mpi_ = true;
    } else {
      MPI_Query_thread(&provided);
    }
    if (provided < MPI_THREAD_SERIALIZED)
      EMBER_FAIL(kInit, "this MPI provides thread level ", provided,
                 ", but the group's communication thread needs MPI_THREAD_SERIALIZED");
    static const bool registered = (std::atexit(abort_job_if_failed), true);
    (void)registered;
    // An own communicator, whose errors come back as codes (thrown as ember::Error).
    check(kInit, "MPI_Comm_dup", MPI_Comm_dup(MPI_COMM_WORLD, &comm_));
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MPI_Comm local;
    check(kInit, "MPI_Comm_split_type",
          MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local));
    MPI_Comm_rank(local, &local_rank_);
    MPI_Comm_size(local, &local_size_);
    MPI_Comm_free(&local);
    // Largest count per call (MPI's counts are int); smaller values test the chunking.
    chunk_ = env_int("EMBER_DIST_MPI_CHUNK", INT_MAX, 1, INT_MAX);
  }

  ~MpiEngine() override {
    if (g_failed) return;  // the job ends with MPI_Abort at exit; a peer may never finalize
    MPI_Comm_free(&comm_);
    if (owns_mpi_) {
      MPI_Finalize();
      g_finalized = true;
    }
  }

  const char* name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }
  bool reduces(DType dtype) const override { return mpi_type(dtype) != MPI_DATATYPE_NULL; }

  void all_reduce(const char* op, void* data, int64_t count, DType dtype, ReduceOp red,
                  double) override {
    const MPI_Datatype t = mpi_type(dtype);
    const int64_t es = dtype_size(dtype);
    for (int64_t off = 0; off < count; off += chunk_) {
      const int n = int(std::min<int64_t>(chunk_, count - off));
      check(op, "MPI_Allreduce",
            MPI_Allreduce(MPI_IN_PLACE, static_cast<char*>(data) + off * es, n, t, mpi_op(red),
                          comm_));
    }
  }

  void broadcast(const char* op, void* data, int64_t bytes, int root, double) override {
    for (int64_t off = 0; off < bytes; off += chunk_) {
      const int n = int(std::min<int64_t>(chunk_, bytes - off));
      check(op, "MPI_Bcast", MPI_Bcast(static_cast<char*>(data) + off, n, MPI_BYTE, root, comm_));
    }
  }

  void all_gather(const char* op, const void* in, void* out, int64_t bytes, double) override {
    if (bytes <= chunk_) {
      check(op, "MPI_Allgather",
            MPI_Allgather(in, int(bytes), MPI_BYTE, out, int(bytes), MPI_BYTE, comm_));
      return;
    }
    for (int64_t off = 0; off < bytes; off += chunk_) {
      const int n = int(std::min<int64_t>(chunk_, bytes - off));
      MPI_Datatype slice = strided_bytes(op, n, bytes);
      const int rc = MPI_Allgather(static_cast<const char*>(in) + off, n, MPI_BYTE,
                                   static_cast<char*>(out) + off, 1, slice, comm_);
      MPI_Type_free(&slice);
      check(op, "MPI_Allgather", rc);
    }
  }

  void reduce_scatter(const char* op, const void* in, void* out, int64_t count, DType dtype,
                      ReduceOp red, double) override {
    const MPI_Datatype t = mpi_type(dtype);
    const int64_t es = dtype_size(dtype);
    if (count <= chunk_) {
      check(op, "MPI_Reduce_scatter_block",
            MPI_Reduce_scatter_block(in, out, int(count), t, mpi_op(red), comm_));
      return;
    }
    // Past int counts: each rank's block reduced to it in chunks (MPI's reductions take only
    // predefined datatypes in Open MPI, not a strided one over the blocks).
    for (int root = 0; root < size_; ++root)
      for (int64_t off = 0; off < count; off += chunk_) {
        const int n = int(std::min<int64_t>(chunk_, count - off));
        const char* src = static_cast<const char*>(in) + (root * count + off) * es;
        check(op, "MPI_Reduce",
              MPI_Reduce(src, static_cast<char*>(out) + off * es, n, t, mpi_op(red), root, comm_));
      }
  }

  void barrier(const char* op, double) override { check(op, "MPI_Barrier", MPI_Barrier(comm_)); }

  void on_failure() noexcept override { g_failed = true; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  int64_t chunk_ = INT_MAX;
  bool owns_mpi_ = false;
};

}  // namespace

std::unique_ptr<ProcessGroup::Engine> make_mpi_engine(double) {
  return std::make_unique<MpiEngine>();
}

}  // namespace ember::dist::detail
