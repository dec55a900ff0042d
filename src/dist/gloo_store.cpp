// TcpStore: the Gloo engine's rendezvous (gloo_store.h). Requests and replies are framed with
// 32-bit big-endian lengths; one blocking request at a time per client.
#include "dist/gloo_store.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include "ember/error.h"

namespace ember::dist::detail {
namespace {

constexpr const char* kOp = "dist::init_process_group";
// Larger frames are not from an Ember rank (a port scanner, another protocol): drop them.
constexpr uint32_t kMaxFrame = 64u << 20;
enum Cmd : uint8_t { kHello = 1, kSet, kGet, kWait, kDeparted };

using Clock = std::chrono::steady_clock;

std::string errno_text(int err) { return std::strerror(err); }

// "1, 2, 5", or the first 16 and how many more (an error line, not a dump of 65,535 ranks).
std::string list_ranks(const std::vector<int>& ranks) {
  std::string s;
  const size_t shown = std::min<size_t>(ranks.size(), 16);
  for (size_t i = 0; i < shown; ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  if (ranks.size() > shown) s += " and " + std::to_string(ranks.size() - shown) + " more";
  return s;
}

std::string seconds(std::chrono::milliseconds ms) {
  std::ostringstream os;
  os << double(ms.count()) / 1000 << " s";
  return os.str();
}

// --- framing ---------------------------------------------------------------------------------

void put_u32(std::vector<char>& b, uint32_t v) {
  v = htonl(v);
  b.insert(b.end(), reinterpret_cast<char*>(&v), reinterpret_cast<char*>(&v) + 4);
}
void put_bytes(std::vector<char>& b, const char* p, size_t n) {
  put_u32(b, uint32_t(n));
  b.insert(b.end(), p, p + n);
}
void put_str(std::vector<char>& b, const std::string& s) { put_bytes(b, s.data(), s.size()); }
void put_ranks(std::vector<char>& b, const std::vector<int>& r) {
  put_u32(b, uint32_t(r.size()));
  for (int x : r) put_u32(b, uint32_t(x));
}

// Reads a frame's fields in order; any overrun marks it bad.
struct Reader {
  const std::vector<char>& b;
  size_t at = 0;
  bool bad = false;
  uint32_t u32() {
    if (at + 4 > b.size()) {
      bad = true;
      return 0;
    }
    uint32_t v;
    std::memcpy(&v, b.data() + at, 4);
    at += 4;
    return ntohl(v);
  }
  std::vector<char> bytes() {
    uint32_t n = u32();
    if (bad || at + n > b.size()) {
      bad = true;
      return {};
    }
    std::vector<char> v(b.begin() + long(at), b.begin() + long(at + n));
    at += n;
    return v;
  }
  std::string str() {
    auto v = bytes();
    return {v.begin(), v.end()};
  }
  std::vector<int> ranks() {
    uint32_t n = u32();
    std::vector<int> r;
    for (uint32_t i = 0; i < n && !bad; ++i) r.push_back(int(u32()));
    return r;
  }
};

bool send_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= size_t(k);
  }
  return true;
}

bool send_frame(int fd, const std::vector<char>& body) {
  std::vector<char> f;
  put_bytes(f, body.data(), body.size());
  return send_all(fd, f.data(), f.size());
}

enum class RecvStatus { ok, closed, timed_out };

// Reads exactly n bytes; deadline = nullopt blocks.
RecvStatus recv_all(int fd, char* p, size_t n, std::optional<Clock::time_point> deadline) {
  while (n > 0) {
    if (deadline) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now());
      if (left.count() <= 0) return RecvStatus::timed_out;
      pollfd pfd{fd, POLLIN, 0};
      int r = ::poll(&pfd, 1, int(std::min<int64_t>(left.count() + 1, 1 << 30)));
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) continue;  // the loop re-checks the deadline
      if (r < 0) return RecvStatus::closed;
    }
    ssize_t k = ::recv(fd, p, n, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return RecvStatus::closed;
    p += k;
    n -= size_t(k);
  }
  return RecvStatus::ok;
}

RecvStatus recv_frame(int fd, std::vector<char>& body, std::optional<Clock::time_point> deadline) {
  uint32_t n;
  RecvStatus s = recv_all(fd, reinterpret_cast<char*>(&n), 4, deadline);
  if (s != RecvStatus::ok) return s;
  n = ntohl(n);
  if (n > kMaxFrame) return RecvStatus::closed;
  body.resize(n);
  return recv_all(fd, body.data(), n, deadline);
}

struct AddrInfo {
  addrinfo* list = nullptr;
  ~AddrInfo() {
    if (list) ::freeaddrinfo(list);
  }
};

void resolve(AddrInfo& ai, const std::string& host, int port, int socktype) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = socktype;
  int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &ai.list);
  if (rc != 0)
    EMBER_FAIL(kOp, "MASTER_ADDR '", host, "' does not resolve (", ::gai_strerror(rc),
               "): set it to rank 0's IP address or host name");
}

std::string numeric_host(const sockaddr* sa, socklen_t len) {
  char buf[NI_MAXHOST];
  if (::getnameinfo(sa, len, buf, sizeof buf, nullptr, 0, NI_NUMERICHOST) != 0) return "?";
  return buf;
}

}  // namespace

// --- the server (rank 0) --------------------------------------------------------------------

class TcpStore::Server {
 public:
  Server(int family, int port, int world_size) : world_size_(world_size) {
    fd_ = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) EMBER_FAIL(kOp, "socket(): ", errno_text(errno));
    int one = 1;
    // Lets a new job reuse the port of an earlier one in TIME_WAIT; a live listener still
    // makes bind fail with EADDRINUSE.
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_storage ss{};
    socklen_t len;
    if (family == AF_INET6) {
      auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
      a->sin6_family = AF_INET6;
      a->sin6_addr = in6addr_any;
      a->sin6_port = htons(uint16_t(port));
      len = sizeof(sockaddr_in6);
    } else {
      auto* a = reinterpret_cast<sockaddr_in*>(&ss);
      a->sin_family = AF_INET;
      a->sin_addr.s_addr = htonl(INADDR_ANY);
      a->sin_port = htons(uint16_t(port));
      len = sizeof(sockaddr_in);
    }
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd_, 1024) != 0) {
      int err = errno;
      ::close(fd_);
      if (err == EADDRINUSE)
        EMBER_FAIL(kOp, "rank 0 cannot serve the rendezvous on MASTER_PORT ", port,
                   ": the port is in use (another job, or an earlier run still holding it); set "
                   "MASTER_PORT to a free port");
      EMBER_FAIL(kOp, "rank 0 cannot serve the rendezvous on MASTER_PORT ", port, ": ",
                 errno_text(err));
    }
    accept_thread_ = std::thread([this] { accept_loop(); });
  }

  // Waits until every other rank that arrived has closed its connection, or `limit` passes.
  void linger(std::chrono::milliseconds limit) {
    std::unique_lock<std::mutex> lock(m_);
    cv_.wait_for(lock, limit, [&] {
      return std::all_of(arrived_.begin(), arrived_.end(),
                         [&](int r) { return r == 0 || departed_.count(r) > 0; });
    });
  }

  ~Server() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
      for (int fd : conns_) ::shutdown(fd, SHUT_RDWR);  // wakes their blocking recv
    }
    cv_.notify_all();
    ::shutdown(fd_, SHUT_RDWR);  // wakes accept() (Linux)
    accept_thread_.join();
    for (auto& t : threads_) t.join();
    ::close(fd_);
  }

 private:
  void accept_loop() {
    for (;;) {
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      int err = errno;
      if (c < 0 && (err == EMFILE || err == ENFILE)) std::this_thread::sleep_for(kBackoff);
      std::lock_guard<std::mutex> lock(m_);
      if (stop_) {
        if (c >= 0) ::close(c);
        return;
      }
      if (c < 0) {
        if (err == EINTR || err == ECONNABORTED || err == EMFILE || err == ENFILE) continue;
        return;
      }
      int one = 1;
      ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      conns_.insert(c);
      threads_.emplace_back([this, c] { serve(c); });
    }
  }

  // One connection: its rank says hello, then makes requests until it closes.
  void serve(int fd) {
    int rank = -1;
    std::vector<char> req;
    while (recv_frame(fd, req, std::nullopt) == RecvStatus::ok) {
      Reader r{req};
      if (req.empty()) break;
      r.at = 1;
      std::vector<char> out;
      switch (uint8_t(req[0])) {
        case kHello: {
          int who = int(r.u32()), world = int(r.u32());
          if (r.bad) goto done;
          std::string err = hello(who, world);
          out.push_back(err.empty() ? 0 : 1);
          put_str(out, err);
          if (err.empty()) rank = who;
          break;
        }
        case kSet: {
          std::string key = r.str();
          auto value = r.bytes();
          if (r.bad) goto done;
          {
            std::lock_guard<std::mutex> lock(m_);
            data_[key] = std::move(value);
          }
          cv_.notify_all();
          out.push_back(0);
          break;
        }
        case kGet: {
          std::string key = r.str();
          if (r.bad) goto done;
          std::lock_guard<std::mutex> lock(m_);
          auto it = data_.find(key);
          out.push_back(it == data_.end() ? 1 : 0);
          if (it != data_.end()) put_bytes(out, it->second.data(), it->second.size());
          break;
        }
        case kWait: {
          auto timeout = std::chrono::milliseconds(r.u32());
          uint32_t n = r.u32();
          std::vector<std::string> keys;
          for (uint32_t i = 0; i < n && !r.bad; ++i) keys.push_back(r.str());
          if (r.bad) goto done;
          out = wait(keys, timeout);
          break;
        }
        case kDeparted: {
          std::lock_guard<std::mutex> lock(m_);
          out.push_back(0);
          put_ranks(out, {departed_.begin(), departed_.end()});
          break;
        }
        default:
          goto done;
      }
      if (!send_frame(fd, out)) break;
    }
  done:
    std::lock_guard<std::mutex> lock(m_);
    if (rank >= 0) departed_.insert(rank);
    conns_.erase(fd);
    ::close(fd);
    cv_.notify_all();
  }

  std::string hello(int rank, int world) {
    std::lock_guard<std::mutex> lock(m_);
    if (world != world_size_)
      return "rank " + std::to_string(rank) + " has WORLD_SIZE=" + std::to_string(world) +
             " but rank 0 has WORLD_SIZE=" + std::to_string(world_size_) +
             ": start every rank with the same WORLD_SIZE";
    if (rank < 0 || rank >= world_size_)
      return "RANK=" + std::to_string(rank) + " is outside [0, " + std::to_string(world_size_) +
             ")";
    if (arrived_.count(rank))
      return "two processes were started with RANK=" + std::to_string(rank) +
             ": give each process its own RANK in [0, WORLD_SIZE)";
    arrived_.insert(rank);
    return {};
  }

  // Reply: 0 when every key is set; else 1, the missing keys, the ranks that never said hello
  // and those that left.
  std::vector<char> wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(m_);
    auto all_set = [&] {
      return stop_ || std::all_of(keys.begin(), keys.end(),
                                  [&](const std::string& k) { return data_.count(k) > 0; });
    };
    std::vector<char> out;
    if (cv_.wait_for(lock, timeout, all_set) && !stop_) {
      out.push_back(0);
      return out;
    }
    out.push_back(1);
    std::vector<std::string> missing;
    for (const auto& k : keys)
      if (!data_.count(k)) missing.push_back(k);
    put_u32(out, uint32_t(missing.size()));
    for (const auto& k : missing) put_str(out, k);
    std::vector<int> absent;
    for (int r = 0; r < world_size_; ++r)
      if (!arrived_.count(r)) absent.push_back(r);
    put_ranks(out, absent);
    put_ranks(out, {departed_.begin(), departed_.end()});
    return out;
  }

  static constexpr auto kBackoff = std::chrono::milliseconds(100);
  int fd_ = -1;
  int world_size_;
  std::thread accept_thread_;
  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::set<int> conns_;
  std::vector<std::thread> threads_;
  std::map<std::string, std::vector<char>> data_;
  std::set<int> arrived_, departed_;
};

// --- the client (every rank) ----------------------------------------------------------------

namespace {

// The store's connection closed: rank 0, which serves it, is gone.
struct StoreClosed : Error {
  using Error::Error;
};

// Connects to the first reachable address of host:port, retrying until the deadline (the
// server may not be listening yet).
int connect_with_retries(const std::string& host, int port, int rank, Clock::time_point deadline,
                         std::chrono::milliseconds timeout) {
  std::string last = "no address";
  auto backoff = std::chrono::milliseconds(20);
  for (;;) {
    AddrInfo ai;
    resolve(ai, host, port, SOCK_STREAM);
    for (addrinfo* a = ai.list; a; a = a->ai_next) {
      int fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
      if (fd < 0) continue;
      int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
      if (rc != 0 && errno == EINPROGRESS) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        pollfd pfd{fd, POLLOUT, 0};
        int err = 0;
        socklen_t len = sizeof err;
        if (::poll(&pfd, 1, int(std::max<int64_t>(left.count(), 1))) == 1 &&
            ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0)
          rc = 0;
        else
          errno = err ? err : ETIMEDOUT;
      }
      if (rc == 0) {
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        return fd;
      }
      last = numeric_host(a->ai_addr, a->ai_addrlen) + ": " + errno_text(errno);
      ::close(fd);
    }
    if (Clock::now() + backoff >= deadline)
      EMBER_FAIL(kOp, "rank ", rank,
                 " could not reach the rendezvous at MASTER_ADDR:MASTER_PORT = ", host, ":", port,
                 " within ", seconds(timeout), " (last error: ", last,
                 "): is rank 0 running, with the same MASTER_ADDR and MASTER_PORT, and is the "
                 "port open between the machines?");
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(500));
  }
}

// Rank 0 serves the store, so MASTER_ADDR must be one of its machine's addresses (bind fails
// with EADDRNOTAVAIL otherwise). Returns the family to listen on.
int local_family(const std::string& host, int port) {
  AddrInfo ai;
  resolve(ai, host, port, SOCK_DGRAM);
  std::string seen;
  for (addrinfo* a = ai.list; a; a = a->ai_next) {
    int fd = ::socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    sockaddr_storage ss{};
    std::memcpy(&ss, a->ai_addr, a->ai_addrlen);
    // Port 0: only the address is checked here.
    if (a->ai_family == AF_INET6)
      reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port = 0;
    else
      reinterpret_cast<sockaddr_in*>(&ss)->sin_port = 0;
    int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&ss), a->ai_addrlen);
    ::close(fd);
    if (rc == 0) return a->ai_family;
    seen += (seen.empty() ? "" : ", ") + numeric_host(a->ai_addr, a->ai_addrlen);
  }
  EMBER_FAIL(kOp, "MASTER_ADDR '", host, "' (", seen,
             ") is not an address of rank 0's machine, and rank 0 serves the rendezvous there: "
             "set MASTER_ADDR to rank 0's address on every rank");
}

}  // namespace

struct TcpStore::Reply {
  std::vector<char> body;
};

TcpStore::TcpStore(const std::string& host, int port, int rank, int world_size, bool serve,
                   std::chrono::milliseconds timeout)
    : where_(host + ":" + std::to_string(port)),
      rank_(rank),
      world_size_(world_size),
      timeout_(timeout) {
  auto deadline = Clock::now() + timeout;
  if (serve) server_ = std::make_unique<Server>(local_family(host, port), port, world_size);
  fd_ = connect_with_retries(host, port, rank, deadline, timeout);
  std::vector<char> msg{char(kHello)};
  put_u32(msg, uint32_t(rank));
  put_u32(msg, uint32_t(world_size));
  try {
    Reply rep = request(msg, timeout);
    Reader r{rep.body};
    r.at = 1;
    std::string err = r.str();
    if (rep.body[0] != 0)
      EMBER_FAIL(kOp, "the rendezvous at ", where_, " rejected rank ", rank, ": ", err);
  } catch (...) {
    ::close(fd_);  // the destructor does not run for a throwing constructor
    throw;
  }
}

TcpStore::~TcpStore() {
  // Rank 0 keeps the store up a moment for the ranks still reading it: a failed rank's reason
  // (engine: who_closed) or the last rendezvous keys.
  if (server_) server_->linger(std::min(timeout_, std::chrono::milliseconds(5000)));
  if (fd_ >= 0) ::close(fd_);
  server_.reset();
}

TcpStore::Reply TcpStore::request(const std::vector<char>& msg,
                                  std::chrono::milliseconds reply_timeout) {
  std::lock_guard<std::mutex> lock(mutex_);
  Reply rep;
  if (!send_frame(fd_, msg))
    throw StoreClosed("[" + std::string(kOp) + "] the rendezvous at " + where_ +
                      " closed its connection (rank 0, which serves it, exited or died)");
  switch (recv_frame(fd_, rep.body, Clock::now() + reply_timeout)) {
    case RecvStatus::ok:
      if (rep.body.empty()) break;
      return rep;
    case RecvStatus::timed_out:
      EMBER_FAIL(kOp, "the rendezvous at ", where_, " did not answer within ",
                 seconds(reply_timeout));
    case RecvStatus::closed:
      break;
  }
  throw StoreClosed("[" + std::string(kOp) + "] the rendezvous at " + where_ +
                    " closed its connection (rank 0, which serves it, exited or died)");
}

void TcpStore::set(const std::string& key, const std::vector<char>& data) {
  std::vector<char> msg{char(kSet)};
  put_str(msg, key);
  put_bytes(msg, data.data(), data.size());
  request(msg, timeout_);
}

std::optional<std::vector<char>> TcpStore::try_get(const std::string& key) {
  std::vector<char> msg{char(kGet)};
  put_str(msg, key);
  Reply rep = request(msg, timeout_);
  if (rep.body[0] != 0) return std::nullopt;
  Reader r{rep.body};
  r.at = 1;
  return r.bytes();
}

std::vector<char> TcpStore::get(const std::string& key) {
  wait({key}, timeout_);
  auto v = try_get(key);
  if (!v) EMBER_FAIL(kOp, "rendezvous key '", key, "' vanished from the store at ", where_);
  return *v;
}

void TcpStore::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void TcpStore::wait(const std::vector<std::string>& keys,
                    const std::chrono::milliseconds& timeout) {
  std::vector<char> msg{char(kWait)};
  auto ms = std::clamp<int64_t>(timeout.count(), 0, int64_t(UINT32_MAX));
  put_u32(msg, uint32_t(ms));
  put_u32(msg, uint32_t(keys.size()));
  for (const auto& k : keys) put_str(msg, k);
  // The server answers at its deadline; the margin covers the network.
  Reply rep = request(msg, std::chrono::milliseconds(ms) + std::chrono::seconds(10));
  if (rep.body[0] == 0) return;
  Reader r{rep.body};
  r.at = 1;
  uint32_t n = r.u32();
  std::string missing;
  for (uint32_t i = 0; i < n && !r.bad; ++i) {
    const std::string k = r.str();
    if (i < 16) missing += (i ? ", " : "") + k;
  }
  if (n > 16) missing += " and " + std::to_string(n - 16) + " more";
  std::vector<int> absent = r.ranks(), departed = r.ranks();
  std::ostringstream why;
  why << "the rendezvous at MASTER_ADDR:MASTER_PORT = " << where_ << " timed out after "
      << seconds(std::chrono::milliseconds(ms)) << " (rank " << rank_ << " of " << world_size_
      << ")";
  if (!absent.empty())
    why << ": rank" << (absent.size() > 1 ? "s " : " ") << list_ranks(absent)
        << " never arrived (start every rank, with the same MASTER_ADDR, MASTER_PORT and "
           "WORLD_SIZE)";
  if (!departed.empty())
    why << (absent.empty() ? ": " : "; ") << "rank" << (departed.size() > 1 ? "s " : " ")
        << list_ranks(departed) << " left before it finished (exited or died)";
  if (absent.empty() && departed.empty()) why << ": keys still missing: " << missing;
  EMBER_FAIL(kOp, why.str());
}

std::vector<int> TcpStore::departed_ranks() noexcept {
  try {
    Reply rep = request({char(kDeparted)}, std::chrono::seconds(5));
    Reader r{rep.body};
    r.at = 1;
    return r.ranks();
  } catch (const StoreClosed&) {
    return {0};
  } catch (...) {
    return {};
  }
}

}  // namespace ember::dist::detail
