// `ember train --nproc N`: starts N copies of this very command line (without --nproc) through
// Open MPI's launcher, one process per rank (docs/distributed.md).
#pragma once

namespace ember::tools {

/// Whether this process was started by a launcher (mpirun: OMPI_COMM_WORLD_SIZE; torchrun-style:
/// WORLD_SIZE or RANK), i.e. it is one rank of a data-parallel run.
bool launched_as_rank();

/// Replaces this process with `mpirun -np nproc <this command without --nproc>` and returns only
/// on failure, throwing ember::Error("[train] ...") naming what is missing (Debian openmpi-bin)
/// or what failed, and for more than 4 processes per hardware thread. Run as root, adds
/// --allow-run-as-root; more processes than hardware threads, --oversubscribe and a warning.
[[noreturn]] void exec_under_mpirun(int nproc);

}  // namespace ember::tools
