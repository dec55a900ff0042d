// The "gloo" engine (include/ember/dist/dist.h): Gloo's collectives over its TCP transport, for
// processes started with torchrun-style variables RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT.
// The rendezvous is Ember's TcpStore (gloo_store.h) served by rank 0; Debian's Gloo has no TCP
// store of its own.
#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/common/logging.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include "core/env.h"
#include "dist/engine.h"
#include "dist/gloo_store.h"
#include "ember/error.h"

namespace ember::dist {
namespace {

constexpr const char* kInit = "dist::init_process_group";
using Func = gloo::AllreduceOptions::Func;
// all_reduce's ring moves data in segments of this size, two in flight: 4 MiB ran a 40 MB f32
// all_reduce between two local processes ~15% faster than Gloo's default 1 MiB.
constexpr size_t kSegmentBytes = size_t(4) << 20;
using detail::TcpStore;

// --- the launcher's environment ---------------------------------------------------------------

std::string required(const char* name) {
  std::string v = env_string(name);
  if (v.empty())
    EMBER_FAIL(kInit, "the gloo engine needs ", name,
               " (torchrun-style launch: RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT on every "
               "process; or start the processes with mpirun for the mpi engine)");
  return v;
}

int parse_int(const char* name, const std::string& text, long lo, long hi, const char* range) {
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0')
    EMBER_FAIL(kInit, name, "='", text, "' is not an integer");
  if (v < lo || v > hi) EMBER_FAIL(kInit, name, "=", v, " is outside ", range);
  return int(v);
}

// The local address from which `host` is reached (the route's source address): connecting a
// UDP socket sends nothing, it only picks the route. Gloo's pairs listen there, so peers on
// other machines (or network namespaces) reach them the way they reach MASTER_ADDR.
std::string local_address_towards(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* list = nullptr;
  int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &list);
  if (rc != 0)
    EMBER_FAIL(kInit, "MASTER_ADDR '", host, "' does not resolve (", ::gai_strerror(rc),
               "): set it to rank 0's IP address or host name");
  std::string found, err = "no address";
  for (addrinfo* a = list; a && found.empty(); a = a->ai_next) {
    int fd = ::socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    char buf[NI_MAXHOST];
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0 &&
        ::getnameinfo(reinterpret_cast<sockaddr*>(&ss), len, buf, sizeof buf, nullptr, 0,
                      NI_NUMERICHOST) == 0)
      found = buf;
    else
      err = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(list);
  if (found.empty())
    EMBER_FAIL(kInit, "no route from this machine to MASTER_ADDR '", host, "' (", err, ")");
  return found;
}

// --- reductions ---------------------------------------------------------------------------

// max and min propagate NaN, as torch.maximum / torch.minimum (std::max would drop it).
template <typename T>
void sum_fn(void* c, const void* a, const void* b, size_t n) {
  auto* y = static_cast<T*>(c);
  auto *p = static_cast<const T*>(a), *q = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) y[i] = T(p[i] + q[i]);
}
template <typename T>
void max_fn(void* c, const void* a, const void* b, size_t n) {
  auto* y = static_cast<T*>(c);
  auto *p = static_cast<const T*>(a), *q = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) y[i] = (p[i] > q[i] || p[i] != p[i]) ? p[i] : q[i];
}
template <typename T>
void min_fn(void* c, const void* a, const void* b, size_t n) {
  auto* y = static_cast<T*>(c);
  auto *p = static_cast<const T*>(a), *q = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) y[i] = (p[i] < q[i] || p[i] != p[i]) ? p[i] : q[i];
}

// Calls f(T{}) for the dtypes Gloo reduces as they are.
template <typename F>
void dispatch(DType t, F&& f) {
  switch (t) {
    case DType::f32:
      return f(float{});
    case DType::f64:
      return f(double{});
    case DType::i8:
      return f(int8_t{});
    case DType::i16:
      return f(int16_t{});
    case DType::i32:
      return f(int32_t{});
    case DType::i64:
      return f(int64_t{});
    case DType::u8:
      return f(uint8_t{});
    case DType::u16:
      return f(uint16_t{});
    case DType::u32:
      return f(uint32_t{});
    case DType::u64:
      return f(uint64_t{});
    default:
      EMBER_FAIL("dist", "the gloo engine does not reduce ", dtype_name(t));
  }
}

template <typename T>
Func reduce_function(ReduceOp op) {
  switch (op) {
    case ReduceOp::max:
      return &max_fn<T>;
    case ReduceOp::min:
      return &min_fn<T>;
    default:
      return &sum_fn<T>;  // mean arrives as sum (the group divides)
  }
}

std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::milliseconds(std::llround(std::clamp(seconds, 0.001, 1e9) * 1000));
}

std::string ranks_text(const std::vector<int>& r) {
  std::string s = r.size() > 1 ? "ranks " : "rank ";
  for (size_t i = 0; i < r.size(); ++i) s += (i ? ", " : "") + std::to_string(r[i]);
  return s;
}

bool contains(const std::string& s, const char* what) { return s.find(what) != s.npos; }

// Gloo's messages start with "[/path/to/file.cc:123] ": keep the message.
std::string gloo_text(const std::string& what) {
  if (!what.empty() && what[0] == '[') {
    auto end = what.find("] ");
    if (end != what.npos) return what.substr(end + 2);
  }
  return what;
}

// --- the engine ---------------------------------------------------------------------------

class GlooEngine final : public ProcessGroup::Engine {
 public:
  explicit GlooEngine(double timeout_seconds) {
    // Each rank costs rank 0 a connection and a few keys: 65536 is far past any machine count
    // here, and 2^31 ranks exhausted the memory of rank 0's machine before an error.
    size_ = parse_int("WORLD_SIZE", required("WORLD_SIZE"), 1, 65536, "[1, 65536]");
    rank_ = parse_int("RANK", required("RANK"), 0, size_ - 1,
                      ("[0, WORLD_SIZE=" + std::to_string(size_) + ")").c_str());
    std::string addr = required("MASTER_ADDR");
    int port = parse_int("MASTER_PORT", required("MASTER_PORT"), 1, 65535, "[1, 65535]");
    auto timeout = to_ms(timeout_seconds);
    std::string lr = env_string("LOCAL_RANK"), lws = env_string("LOCAL_WORLD_SIZE");
    if (!lr.empty() && !lws.empty()) {
      local_size_ = parse_int("LOCAL_WORLD_SIZE", lws, 1, size_, "[1, WORLD_SIZE]");
      local_rank_ = parse_int("LOCAL_RANK", lr, 0, local_size_ - 1, "[0, LOCAL_WORLD_SIZE)");
    }

    // A peer that dies makes Gloo's writev on its socket raise SIGPIPE, whose default action
    // ends the process silently; ignored, the write fails and the collective throws.
    struct sigaction old {};
    if (::sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL)
      std::signal(SIGPIPE, SIG_IGN);

    std::string local = local_address_towards(addr, port);
    store_ = std::make_unique<TcpStore>(addr, port, rank_, size_, rank_ == 0, timeout);
    set_local_ranks();

    gloo::transport::tcp::attr attr;
    attr.hostname = local;
    attr.ai_family = AF_UNSPEC;
    try {
      auto device = gloo::transport::tcp::CreateDevice(attr);
      ctx_ = std::make_shared<gloo::rendezvous::Context>(rank_, size_);
      ctx_->setTimeout(timeout);
      ctx_->connectFullMesh(*store_, device);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      EMBER_FAIL(kInit, "rank ", rank_, " of ", size_, " could not connect Gloo's TCP pairs (",
                 "listening on ", local, ", rendezvous at ", addr, ":", port, ") within ",
                 timeout_seconds, " s: ", gloo_text(e.what()),
                 " (is a firewall blocking the ranks' ports?)");
    }
  }

  ~GlooEngine() override {
    ctx_.reset();  // closes the pairs before the store goes
    store_.reset();
  }

  const char* name() const override { return "gloo"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }
  bool reduces(DType t) const override {
    return t != DType::f16 && t != DType::bf16 && t != DType::b8;
  }

  void all_reduce(const char* op, void* data, int64_t count, DType dtype, ReduceOp red,
                  double timeout_seconds) override {
    if (count == 0) return;
    run(op, timeout_seconds, [&] {
      dispatch(dtype, [&](auto zero) {
        using T = decltype(zero);
        gloo::AllreduceOptions o(ctx_);
        o.setOutput(static_cast<T*>(data), size_t(count));
        o.setReduceFunction(reduce_function<T>(red));
        o.setTag(next_tag());
        o.setTimeout(to_ms(timeout_seconds));
        o.setMaxSegmentSize(kSegmentBytes);
        gloo::allreduce(o);
      });
    });
  }

  void broadcast(const char* op, void* data, int64_t bytes, int root,
                 double timeout_seconds) override {
    if (bytes == 0) return;
    run(op, timeout_seconds, [&] {
      gloo::BroadcastOptions o(ctx_);
      o.setOutput(static_cast<uint8_t*>(data), size_t(bytes));
      o.setRoot(root);
      o.setTag(next_tag());
      o.setTimeout(to_ms(timeout_seconds));
      gloo::broadcast(o);
    });
  }

  void all_gather(const char* op, const void* in, void* out, int64_t bytes,
                  double timeout_seconds) override {
    if (bytes == 0) return;
    run(op, timeout_seconds, [&] {
      gloo::AllgatherOptions o(ctx_);
      o.setInput(const_cast<uint8_t*>(static_cast<const uint8_t*>(in)), size_t(bytes));
      o.setOutput(static_cast<uint8_t*>(out), size_t(bytes) * size_t(size_));
      o.setTag(next_tag());
      o.setTimeout(to_ms(timeout_seconds));
      gloo::allgather(o);
    });
  }

  // An all_reduce of the whole input, then this rank's block: twice the bytes of a ring
  // reduce-scatter, but Gloo's only reduce-scatter (ReduceScatterHalvingDoubling) is an
  // old-style algorithm with 32-bit counts and typed reduction functions.
  void reduce_scatter(const char* op, const void* in, void* out, int64_t count, DType dtype,
                      ReduceOp red, double timeout_seconds) override {
    if (count == 0) return;
    size_t block = size_t(count) * size_t(dtype_size(dtype));
    std::vector<uint8_t> all(static_cast<const uint8_t*>(in),
                             static_cast<const uint8_t*>(in) + block * size_t(size_));
    all_reduce(op, all.data(), count * size_, dtype, red, timeout_seconds);
    std::memcpy(out, all.data() + block * size_t(rank_), block);
  }

  void barrier(const char* op, double timeout_seconds) override {
    run(op, timeout_seconds, [&] {
      gloo::BarrierOptions o(ctx_);
      o.setTag(next_tag());
      o.setTimeout(to_ms(timeout_seconds));
      gloo::barrier(o);
    });
  }

  // Tells the others why this rank stops (they read it when its connections close), then
  // closes every pair so that no peer waits for its timeout. The group may call this from a
  // waiter that timed out while the communication thread is still inside Gloo.
  void on_failure() noexcept override {
    try {
      std::string why;
      {
        std::lock_guard<std::mutex> lock(error_mutex_);
        why = last_error_.empty() ? "its collective timed out or failed" : last_error_;
      }
      store_->set(failed_key(rank_), {why.begin(), why.end()});
    } catch (...) {  // the store may be gone with rank 0
    }
    try {
      ctx_->closeConnections();
    } catch (...) {
    }
  }

 private:
  static std::string failed_key(int r) { return "ember/failed/" + std::to_string(r); }

  uint32_t next_tag() { return tag_++; }

  // The rendezvous (its wait names the ranks that never arrived): every rank publishes its host
  // name; ranks sharing one are on the same machine (network namespaces of one machine share its
  // host name, and its cores), unless torchrun's LOCAL_RANK and LOCAL_WORLD_SIZE said already.
  void set_local_ranks() {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    store_->set("ember/host/" + std::to_string(rank_), {host, host + std::strlen(host)});
    std::vector<std::string> keys;
    for (int r = 0; r < size_; ++r) keys.push_back("ember/host/" + std::to_string(r));
    store_->wait(keys);
    if (local_size_ > 0) return;
    local_rank_ = 0;
    for (int r = 0; r < size_; ++r) {
      auto h = store_->get(keys[size_t(r)]);
      if (std::string(h.begin(), h.end()) != host) continue;
      if (r < rank_) ++local_rank_;
      ++local_size_;
    }
  }

  template <typename F>
  void run(const char* op, double timeout_seconds, F&& f) {
    try {
      f();
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      std::string message = explain(op, gloo_text(e.what()), timeout_seconds);
      {
        std::lock_guard<std::mutex> lock(error_mutex_);
        last_error_ = message;
      }
      throw Error(message);
    }
  }

  // The ember::Error's message for a Gloo failure: a timeout, or a peer that closed its
  // connection.
  std::string explain(const char* op, const std::string& what, double timeout_seconds) {
    std::ostringstream os;
    os << '[' << op << "] ";
    if (contains(what, "Timed out") || contains(what, "timeout")) {
      os << "timed out after " << timeout_seconds << " s waiting for the other ranks (rank "
         << rank_ << " of " << size_
         << "): a rank is hung, slower than the timeout, or did not call " << op
         << "; raise EMBER_DIST_TIMEOUT if the work between collectives takes longer";
    } else {
      os << who_closed();
      os << "; rank " << rank_ << " of " << size_ << " cannot continue";
    }
    os << " (gloo: " << what << ")";
    return os.str();
  }

  // Which peer closed its connection, from the store: ranks that left without an error of
  // their own (exited or died) first, the root cause; else one that stopped after its error.
  std::string who_closed() {
    std::vector<int> died;
    std::vector<std::pair<int, std::string>> failed;
    // The store notices a dead rank's closed socket about when Gloo does: give it a moment.
    for (int i = 0; i < 40 && died.empty() && failed.empty(); ++i) {
      if (i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::vector<int> gone = store_->departed_ranks();
      if (rank_ != 0 && gone == std::vector<int>{0}) {
        // The store went with rank 0, or rank 0 left after its own error: no more to learn.
        died = gone;
        break;
      }
      for (int r = 0; r < size_; ++r) {
        if (r == rank_) continue;
        std::optional<std::vector<char>> why;
        try {
          why = store_->try_get(failed_key(r));
        } catch (...) {
        }
        if (why)
          failed.emplace_back(r, std::string(why->begin(), why->end()));
        else if (std::count(gone.begin(), gone.end(), r))
          died.push_back(r);
      }
    }
    if (!died.empty())
      return ranks_text(died) + (died.size() > 1 ? " closed their connections (they exited or died)"
                                                 : " closed its connection (it exited or died)");
    if (!failed.empty())
      return "rank " + std::to_string(failed[0].first) +
             " closed its connection after its own error: " + failed[0].second;
    return "a peer closed its connection (it exited, died, or stopped after its own error)";
  }

  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 0;  // 0: from the host names
  uint32_t tag_ = 0;
  std::mutex error_mutex_;
  std::string last_error_;  // under error_mutex_
  std::unique_ptr<TcpStore> store_;
  std::shared_ptr<gloo::rendezvous::Context> ctx_;
};

}  // namespace

std::unique_ptr<ProcessGroup::Engine> detail::make_gloo_engine(double timeout_seconds) {
  return std::make_unique<GlooEngine>(timeout_seconds);
}

}  // namespace ember::dist
