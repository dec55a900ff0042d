// nn::DistributedDataParallel: the start-up checks and broadcasts, and the reducer (buckets of
// gradients all-reduced from post-accumulate-grad hooks while backward runs, finished in a
// callback at the end of backward), as torch's DistributedDataParallel and its C++ Reducer.
#include "ember/nn/parallel/distributed.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "ember/autograd.h"
#include "ember/autograd/hooks.h"
#include "ember/error.h"

namespace ember::nn {

namespace {

constexpr const char* kOp = "DistributedDataParallel";
constexpr int64_t kMiB = int64_t(1) << 20;
/// torch's _DEFAULT_FIRST_BUCKET_BYTES: a small first bucket starts communication early.
constexpr int64_t kFirstBucketBytes = kMiB;
/// Largest coalesced broadcast (torch broadcasts module states in 250 MB pieces).
constexpr int64_t kBroadcastBytes = 256 * kMiB;

/// Tensors packed back to back in one flat buffer of their common dtype and device.
struct Pack {
  DType dtype = DType::f32;
  Device device;
  std::vector<Tensor> tensors;
  std::vector<int64_t> offsets;  // elements
  int64_t numel = 0;
  /// The flat buffer's slice for tensors[k], shaped as it.
  Tensor slice(const Tensor& flat, size_t k) const {
    return flat.narrow(0, offsets[k], tensors[k].numel()).view(tensors[k].shape());
  }
};

/// Groups `ts` by (dtype, device) in order of first appearance, each group cut into packs of at
/// most `cap` bytes (a larger tensor gets a pack of its own).
std::vector<Pack> make_packs(const std::vector<Tensor>& ts, int64_t cap) {
  std::vector<Pack> done, open;
  for (const Tensor& t : ts) {
    if (t.numel() == 0) continue;
    auto it = std::find_if(open.begin(), open.end(), [&](const Pack& p) {
      return p.dtype == t.dtype() && p.device == t.device();
    });
    if (it == open.end()) {
      open.push_back({t.dtype(), t.device(), {}, {}, 0});
      it = open.end() - 1;
    } else if ((it->numel + t.numel()) * t.element_size() > cap) {
      done.push_back(std::move(*it));
      *it = {t.dtype(), t.device(), {}, {}, 0};
    }
    it->tensors.push_back(t);
    it->offsets.push_back(it->numel);
    it->numel += t.numel();
  }
  for (Pack& p : open) done.push_back(std::move(p));
  return done;
}

/// Copies rank 0's values of `ts` into every rank's, one broadcast per pack.
void broadcast_coalesced(dist::ProcessGroup& group, const std::vector<Tensor>& ts) {
  NoGradGuard no_grad;  // parameters are written in place
  for (const Pack& p : make_packs(ts, kBroadcastBytes)) {
    Tensor flat = empty({p.numel}, TensorOptions(p.dtype, p.device));
    const bool root = group.rank() == 0;
    if (root)
      for (size_t k = 0; k < p.tensors.size(); ++k) p.slice(flat, k).copy_(p.tensors[k]);
    group.broadcast(flat, 0);
    if (!root)
      for (size_t k = 0; k < p.tensors.size(); ++k) Tensor(p.tensors[k]).copy_(p.slice(flat, k));
  }
}

/// One line per parameter and buffer: "<kind> '<name>'\t<dtype> <shape>".
std::string signature(const Module& m) {
  std::string s;
  for (const auto& [name, p] : m.named_parameters())
    s += "parameter '" + name + "'\t" + dtype_name(p.dtype()) + " " + shape_str(p.shape()) +
         (p.requires_grad() ? "" : " (frozen)") + "\n";
  for (const auto& [name, b] : m.named_buffers())
    if (b.defined())
      s += "buffer '" + name + "'\t" + dtype_name(b.dtype()) + " " + shape_str(b.shape()) + "\n";
  return s;
}

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::vector<std::string> lines(std::string_view s) {
  std::vector<std::string> out;
  for (size_t a = 0; a < s.size();) {
    const size_t b = s.find('\n', a);
    out.emplace_back(s.substr(a, b - a));
    a = b + 1;
  }
  return out;
}

/// "<kind> '<name>' <dtype> <shape>" of a signature line, or "nothing" for a missing one.
std::string entry(const std::vector<std::string>& ls, size_t k) {
  if (k >= ls.size()) return "nothing";
  std::string e = ls[k];
  std::replace(e.begin(), e.end(), '\t', ' ');
  return e;
}

/// Throws on every rank when the ranks' signatures differ: all-gathers (hash, length), and only
/// on a mismatch the signatures themselves, to name the first difference.
void check_same_model(dist::ProcessGroup& group, const Module& m) {
  const std::string sig = signature(m);
  const int world = group.world_size();
  const Device host = Device::cpu();
  const Tensor mine = from_vector<int64_t>({int64_t(fnv1a(sig)), int64_t(sig.size())}, {2}, host);
  std::vector<Tensor> heads;
  for (int r = 0; r < world; ++r) heads.push_back(zeros({2}, TensorOptions(DType::i64, host)));
  group.all_gather(heads, mine);
  std::vector<std::vector<int64_t>> h;
  int64_t longest = 0;
  for (const Tensor& t : heads) {
    h.push_back(t.to_vector<int64_t>());
    longest = std::max(longest, h.back()[1]);
  }
  if (std::all_of(h.begin(), h.end(), [&](const auto& v) { return v == h[0]; })) return;

  Tensor bytes = zeros({longest}, TensorOptions(DType::u8, host));
  if (!sig.empty()) std::memcpy(bytes.data_ptr<uint8_t>(), sig.data(), sig.size());
  std::vector<Tensor> all;
  for (int r = 0; r < world; ++r) all.push_back(zeros({longest}, TensorOptions(DType::u8, host)));
  group.all_gather(all, bytes);
  std::vector<std::vector<std::string>> sigs;
  for (int r = 0; r < world; ++r) {
    const std::vector<uint8_t> v = all[size_t(r)].to_vector<uint8_t>();
    sigs.push_back(
        lines(std::string_view(reinterpret_cast<const char*>(v.data()), size_t(h[size_t(r)][1]))));
  }
  for (int r = 1; r < world; ++r) {
    const auto& a = sigs[0];
    const auto& b = sigs[size_t(r)];
    size_t k = 0;
    while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
    if (k == a.size() && k == b.size()) continue;
    const auto tab = [](const std::vector<std::string>& ls, size_t i) {
      return i < ls.size() ? ls[i].find('\t') : std::string::npos;
    };
    const size_t ta = tab(a, k), tb = tab(b, k);
    if (ta != std::string::npos && tb != std::string::npos && ta == tb &&
        a[k].compare(0, ta, b[k], 0, tb) == 0)
      EMBER_FAIL(kOp, "the ranks' models differ: ", a[k].substr(0, ta), " is ", a[k].substr(ta + 1),
                 " on rank 0 but ", b[k].substr(tb + 1), " on rank ", r,
                 "; every rank must build the same module (same parameter and buffer names, "
                 "shapes and dtypes)");
    EMBER_FAIL(kOp, "the ranks' models differ: entry ", k, " is ", entry(a, k), " on rank 0 but ",
               entry(b, k), " on rank ", r, " (rank 0 has ", a.size(),
               " parameters and buffers, rank ", r, " ", b.size(),
               "); every rank must build the same module");
  }
  // Not reached: differing (hash, length) pairs mean some rank's text differs from rank 0's.
}

}  // namespace

struct DistributedDataParallel::Impl {
  dist::ProcessGroup* group = nullptr;
  DistributedDataParallelOptions opts;
  std::vector<std::string> names;  // trainable parameters, module order
  std::vector<Tensor> params;
  std::vector<Tensor> buffers;

  struct Bucket {
    Pack pack;                // its parameters, in reverse module order
    std::vector<size_t> ids;  // their indices in params
    Tensor flat;
    int64_t pending = 0;  // gradients not yet accumulated in this pass
    dist::Work work;
  };
  std::vector<Bucket> buckets;
  std::vector<size_t> bucket_of;  // per parameter
  std::vector<char> ready;        // per parameter: its gradient arrived in this pass

  bool sync = true;      // false inside no_sync()
  bool in_pass = false;  // a synced backward pass is running
  size_t next_launch = 0;
  std::vector<RemovableHandle> hooks;

  /// Runs with the queued callback: finalize() clears `armed`; a backward pass that fails
  /// before its callbacks run destroys the callback unrun, which resets the reducer.
  struct PassGuard {
    explicit PassGuard(Impl* i) : impl(i) {}
    ~PassGuard() {
      if (armed) impl->abort_pass();
    }
    PassGuard(const PassGuard&) = delete;
    PassGuard& operator=(const PassGuard&) = delete;
    Impl* impl;
    bool armed = true;
  };

  void build_buckets(int64_t cap) {
    std::vector<Tensor> reversed(params.rbegin(), params.rend());
    // Per (dtype, device): the first bucket closes at 1 MiB, later ones at cap (torch's
    // compute_bucket_assignment_by_size); buckets are ordered by their first parameter.
    struct Open {
      Bucket b;
      bool first = true;
    };
    std::vector<Open> open;
    std::vector<std::pair<size_t, Bucket>> done;  // position of first parameter, bucket
    auto close = [&](Open& o) {
      done.push_back({params.size() - 1 - o.b.ids[0], std::move(o.b)});
      o.b = Bucket{};
      o.b.pack.dtype = done.back().second.pack.dtype;
      o.b.pack.device = done.back().second.pack.device;
      o.first = false;
    };
    for (size_t pos = 0; pos < reversed.size(); ++pos) {
      const Tensor& p = reversed[pos];
      const size_t id = params.size() - 1 - pos;
      auto it = std::find_if(open.begin(), open.end(), [&](const Open& o) {
        return o.b.pack.dtype == p.dtype() && o.b.pack.device == p.device();
      });
      if (it == open.end()) {
        open.push_back(Open{});
        it = open.end() - 1;
        it->b.pack.dtype = p.dtype();
        it->b.pack.device = p.device();
      }
      Pack& pk = it->b.pack;
      pk.tensors.push_back(p);
      pk.offsets.push_back(pk.numel);
      pk.numel += p.numel();
      it->b.ids.push_back(id);
      const int64_t limit = it->first ? std::min(kFirstBucketBytes, cap) : cap;
      if (pk.numel * dtype_size(pk.dtype) >= limit) close(*it);
    }
    for (Open& o : open)
      if (!o.b.ids.empty()) close(o);
    std::stable_sort(done.begin(), done.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    bucket_of.assign(params.size(), 0);
    for (auto& [pos, b] : done) {
      for (size_t id : b.ids) bucket_of[id] = buckets.size();
      b.flat = empty({b.pack.numel}, TensorOptions(b.pack.dtype, b.pack.device));
      buckets.push_back(std::move(b));
    }
  }

  void begin_pass() {
    in_pass = true;
    next_launch = 0;
    ready.assign(params.size(), 0);
    for (Bucket& b : buckets) b.pending = int64_t(b.ids.size());
    auto guard = std::make_shared<PassGuard>(this);
    autograd::queue_callback([this, guard] {
      guard->armed = false;
      finalize();
    });
  }

  void on_grad_ready(size_t id) {
    if (!in_pass) {
      if (!sync) return;  // no_sync(): the gradient only accumulates
      begin_pass();
    }
    if (ready[id])
      EMBER_FAIL(kOp, "parameter '", names[id],
                 "' got its gradient twice in one backward pass; DistributedDataParallel reduces "
                 "each gradient once per backward");
    ready[id] = 1;
    if (--buckets[bucket_of[id]].pending == 0) launch_ready();
  }

  /// Launches, in bucket order (the same on every rank), every bucket whose gradients are all in.
  void launch_ready() {
    NoGradGuard no_grad;
    while (next_launch < buckets.size() && buckets[next_launch].pending == 0) {
      Bucket& b = buckets[next_launch++];
      for (size_t k = 0; k < b.ids.size(); ++k) {
        const Tensor g = params[b.ids[k]].grad();
        Tensor s = b.pack.slice(b.flat, k);
        if (g.defined())
          s.copy_(g);
        else
          s.zero_();  // unused here (find_unused_parameters)
      }
      b.work = group->all_reduce(b.flat, dist::ReduceOp::mean, /*async_op=*/true);
    }
  }

  /// Waits for every launched all-reduce, dropping errors (after a failed backward).
  void abort_pass() noexcept {
    for (Bucket& b : buckets) {
      try {
        b.work.wait();
      } catch (...) {
      }
      b.work = dist::Work();
    }
    in_pass = false;
  }

  /// At the end of a synced backward: the buckets that are still missing gradients go out
  /// (unused parameters count as zero), then every all-reduce is waited for and its average
  /// copied into .grad.
  void finalize() {
    std::vector<size_t> unused;
    for (size_t id = 0; id < params.size(); ++id)
      if (!ready[id]) {
        unused.push_back(id);
        --buckets[bucket_of[id]].pending;
      }
    // Launched even when unused parameters are an error, so every rank makes the same calls.
    try {
      launch_ready();
    } catch (...) {
      abort_pass();
      throw;
    }
    // With find_unused_parameters: which parameters have a gradient on some rank (the others
    // keep an undefined .grad, so optimizers skip them). Reduced on every rank, used or not.
    Tensor used;
    dist::Work used_work;
    if (opts.find_unused_parameters) {
      std::vector<int32_t> has(params.size());
      for (size_t id = 0; id < params.size(); ++id) has[id] = params[id].grad().defined();
      used = from_vector<int32_t>(has, {int64_t(has.size())}, Device::cpu());
      used_work = group->all_reduce(used, dist::ReduceOp::max, /*async_op=*/true);
    }
    std::exception_ptr err;
    for (Bucket& b : buckets) {
      try {
        b.work.wait();
      } catch (...) {
        if (!err) err = std::current_exception();
      }
      b.work = dist::Work();
    }
    try {
      used_work.wait();
    } catch (...) {
      if (!err) err = std::current_exception();
    }
    in_pass = false;
    if (err) std::rethrow_exception(err);
    if (!unused.empty() && !opts.find_unused_parameters)
      EMBER_FAIL(kOp, "parameter '", names[unused[0]], "' got no gradient in this backward pass",
                 unused.size() > 1 ? " (and " + std::to_string(unused.size() - 1) + " more)" : "",
                 " on rank ", group->rank(),
                 "; every parameter must take part in the loss, or pass find_unused_parameters = "
                 "true (unused parameters then count as zero gradients)");
    const std::vector<int32_t> used_on =
        used.defined() ? used.to_vector<int32_t>() : std::vector<int32_t>(params.size(), 1);
    NoGradGuard no_grad;
    for (Bucket& b : buckets)
      for (size_t k = 0; k < b.ids.size(); ++k) {
        Tensor& p = params[b.ids[k]];
        if (!used_on[b.ids[k]]) continue;
        const Tensor avg = b.pack.slice(b.flat, k);
        Tensor g = p.grad();
        if (g.defined()) {
          g.copy_(avg);
        } else {
          p.set_grad(
              empty(p.shape(), TensorOptions(p.dtype(), p.device()), p.memory_format()).copy_(avg));
        }
      }
  }
};

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<Module> module,
                                                 DistributedDataParallelOptions options)
    : UnaryModule("DistributedDataParallel"),
      module_(std::move(module)),
      impl_(std::make_unique<Impl>()) {
  if (!module_) EMBER_FAIL(kOp, "the module is null");
  if (!(options.bucket_cap_mb > 0))
    EMBER_FAIL(kOp, "bucket_cap_mb must be > 0, got ", options.bucket_cap_mb);
  if (!options.process_group && !dist::is_initialized())
    EMBER_FAIL(kOp,
               "no process group: call dist::init_process_group() first, or pass "
               "options.process_group");
  Impl& s = *impl_;
  s.opts = options;
  s.group = options.process_group ? options.process_group : &dist::default_group();
  for (const auto& [name, p] : module_->named_parameters())
    if (p.requires_grad()) {
      s.names.push_back(name);
      s.params.push_back(p);
    }
  if (s.params.empty())
    EMBER_FAIL(kOp, "the module (", module_->type_name(),
               ") has no parameters that require grad: there is nothing to synchronize");
  for (const Tensor& b : module_->buffers())
    if (b.defined()) s.buffers.push_back(b);

  if (s.group->world_size() > 1) {
    check_same_model(*s.group, *module_);
    std::vector<Tensor> states = module_->parameters();
    states.insert(states.end(), s.buffers.begin(), s.buffers.end());
    broadcast_coalesced(*s.group, states);
  }

  register_module("module", module_);
  s.build_buckets(std::max<int64_t>(1, int64_t(options.bucket_cap_mb * double(kMiB))));
  for (size_t id = 0; id < s.params.size(); ++id)
    s.hooks.push_back(autograd::register_post_accumulate_grad_hook(
        s.params[id], [impl = impl_.get(), id](const Tensor&) { impl->on_grad_ready(id); }));
  if (options.broadcast_buffers && !s.buffers.empty() && s.group->world_size() > 1)
    s.hooks.push_back(module_->add_forward_pre_hook([impl = impl_.get()](Module& m, auto&) {
      if (m.is_training()) broadcast_coalesced(*impl->group, impl->buffers);
    }));
}

DistributedDataParallel::~DistributedDataParallel() {
  for (RemovableHandle& h : impl_->hooks) h.remove();
}

Tensor DistributedDataParallel::forward(const Tensor& x) {
  auto* unary = dynamic_cast<UnaryModule*>(module_.get());
  if (!unary)
    EMBER_FAIL(kOp, "the wrapped ", module_->type_name(),
               " is not a UnaryModule: call ddp.module() (its forward) yourself");
  return (*unary)(x);
}

DistributedDataParallel::NoSync::NoSync(DistributedDataParallel& ddp)
    : ddp_(ddp), prev_(ddp.impl_->sync) {
  ddp_.impl_->sync = false;
}

DistributedDataParallel::NoSync::~NoSync() { ddp_.impl_->sync = prev_; }

bool DistributedDataParallel::require_backward_grad_sync() const { return impl_->sync; }

void DistributedDataParallel::broadcast_buffers() {
  broadcast_coalesced(*impl_->group, impl_->buffers);
}

std::vector<int64_t> DistributedDataParallel::bucket_bytes() const {
  std::vector<int64_t> out;
  for (const auto& b : impl_->buckets) out.push_back(b.pack.numel * dtype_size(b.pack.dtype));
  return out;
}

}  // namespace ember::nn
