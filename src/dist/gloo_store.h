// The Gloo engine's rendezvous: a small TCP key-value store (torch's TCPStore). Rank 0 serves
// it on MASTER_ADDR:MASTER_PORT (one thread per connected rank); every rank, rank 0 included,
// connects to it. The ranks exchange their hostnames and Gloo's pair addresses through it; the
// collectives' bytes then travel over Gloo's own TCP transport. After the rendezvous the store
// stays up as a registry of which ranks left (their store connection closed) or failed, so a
// collective that sees a connection close can say which rank went away.
#pragma once
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <gloo/rendezvous/store.h>

namespace ember::dist::detail {

class TcpStore final : public gloo::rendezvous::Store {
 public:
  /// Rank 0 (serve = true) listens on every address of MASTER_ADDR's family at `port`, after
  /// checking that `host` is one of its machine's addresses; every rank then connects to
  /// host:port, retrying until `timeout`. Throws ember::Error("[dist::init_process_group] ...")
  /// for an address that does not resolve, a port in use, a server that cannot be reached, or a
  /// rank the server rejects (world size mismatch, duplicate rank).
  TcpStore(const std::string& host, int port, int rank, int world_size, bool serve,
           std::chrono::milliseconds timeout);
  /// Rank 0's waits until the other ranks have disconnected, at most min(timeout, 5 s).
  ~TcpStore() override;
  TcpStore(const TcpStore&) = delete;
  TcpStore& operator=(const TcpStore&) = delete;

  void set(const std::string& key, const std::vector<char>& data) override;
  /// Waits (up to the timeout) for the key, then returns its value.
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  /// Throws ember::Error naming the ranks that never connected or left when the keys are not all
  /// set within `timeout`.
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

  /// The value of `key` if it is set, without waiting.
  std::optional<std::vector<char>> try_get(const std::string& key);
  /// Ranks whose connection to the store closed (they exited or died). When the store itself
  /// is gone, rank 0 (its server) is the one that left. Throws nothing: {} on other errors.
  std::vector<int> departed_ranks() noexcept;

  class Server;

 private:
  struct Reply;
  Reply request(const std::vector<char>& msg, std::chrono::milliseconds reply_timeout);

  std::string where_;  // "host:port", for messages
  int rank_;
  int world_size_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<Server> server_;  // rank 0 only
  int fd_ = -1;
  std::mutex mutex_;  // one request at a time on fd_
};

}  // namespace ember::dist::detail
