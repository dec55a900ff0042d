// `ember train --nproc N` through mpirun (tools/launch.h).
#include "launch.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "ember/error.h"

namespace ember::tools {

bool launched_as_rank() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "WORLD_SIZE", "RANK"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

namespace {
// This process's arguments, from /proc/self/cmdline (NUL-separated).
std::vector<std::string> own_arguments() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  std::string cur;
  for (char c : all) {
    if (c == '\0') {
      args.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) args.push_back(cur);
  return args;
}

// The first PATH entry holding an executable `name`; "" when none.
std::string find_in_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= p.size()) {
    const size_t end = p.find(':', start);
    const std::string dir = p.substr(start, end == std::string::npos ? end : end - start);
    const std::string file = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(file.c_str(), X_OK) == 0) return file;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return "";
}
}  // namespace

void exec_under_mpirun(int nproc) {
  const std::string mpirun = find_in_path("mpirun");
  if (mpirun.empty())
    EMBER_FAIL("train",
               "--nproc starts the processes with Open MPI's mpirun, which is not on the PATH "
               "(Debian package openmpi-bin); or start them yourself with mpirun or torchrun-style "
               "RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT variables");
  std::vector<std::string> args = own_arguments();
  if (args.empty()) EMBER_FAIL("train", "--nproc: cannot read this command's arguments");
  std::vector<std::string> cmd = {mpirun, "-np", std::to_string(nproc)};
  if (::geteuid() == 0) cmd.push_back("--allow-run-as-root");
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  // Each rank holds the model, the data and its buffers (about 150 MB for the CNN): --nproc 1000
  // on 2 cores started hundreds of processes. More ranks than hardware threads only share them.
  if (unsigned(nproc) > 4 * hw)
    EMBER_FAIL("train", "--nproc ", nproc,
               " is more than 4 processes per hardware thread of this "
               "machine (",
               hw, "); use at most ", hw,
               " here, or start ranks on several machines: "
               "mpirun -np N -H host1:K,host2:K ember train ...");
  if (unsigned(nproc) > hw) {
    std::cerr << "warning: [train] --nproc " << nproc << " on " << hw
              << " hardware threads: the processes share them (slower than --nproc " << hw << ")\n";
    cmd.push_back("--oversubscribe");
  }
  char exe[4096];  // this ember, by its full path (argv[0] may be relative or a bare name)
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) EMBER_FAIL("train", "--nproc: cannot find this program (", std::strerror(errno), ")");
  cmd.push_back(std::string(exe, size_t(n)));
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--nproc") {
      ++i;  // and its value
      continue;
    }
    if (a.rfind("--nproc=", 0) == 0) continue;
    cmd.push_back(a);
  }
  std::vector<char*> argv;
  for (std::string& s : cmd) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::cout << std::flush;
  std::cerr << std::flush;
  ::execv(mpirun.c_str(), argv.data());
  EMBER_FAIL("train", "--nproc: cannot start ", mpirun, " (", std::strerror(errno), ")");
}

}  // namespace ember::tools
