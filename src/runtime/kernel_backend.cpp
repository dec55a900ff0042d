#include "runtime/kernel_backend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "codegen/common.h"
#include "codegen/lower.h"
#include "core/dispatch.h"
#include "ember/error.h"
#include "runtime/autotune.h"

namespace ember::runtime {

namespace {
// Params arena blocks: each launch's block is bound as codegen::kParamsBytes (the size the
// kernels declare), so that many bytes must follow every offset.
constexpr int64_t kArenaBytes = 64 << 10;
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Every element of `t` (row-major order) from a copy of its storage's bytes.
std::vector<double> strided_values(const std::vector<unsigned char>& bytes, const Tensor& t) {
  std::vector<double> out;
  out.reserve(size_t(t.numel()));
  dispatch_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const int64_t nd = t.dim();
    std::vector<int64_t> idx(size_t(nd), 0);
    for (int64_t n = 0; n < t.numel(); ++n) {
      int64_t off = t.offset();
      for (int64_t d = 0; d < nd; ++d) off += idx[size_t(d)] * t.stride(d);
      T x;
      std::memcpy(&x, bytes.data() + off * int64_t(sizeof(T)), sizeof(T));
      out.push_back(scalar_cast<double>(x));
      for (int64_t d = nd - 1; d >= 0; --d) {
        if (++idx[size_t(d)] < t.size(d)) break;
        idx[size_t(d)] = 0;
      }
    }
  });
  return out;
}
}  // namespace

KernelBackend::KernelBackend(int64_t max_tasks) : max_tasks_(std::max<int64_t>(max_tasks, 1)) {
  enable_fusion();
}

KernelBackend::~KernelBackend() = default;

void KernelBackend::start_use() {
  check_alive();
  if (used_) return;
  start_runtime();
  used_ = true;
}

void KernelBackend::set_max_tasks(int64_t n) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  EMBER_CHECK(n >= 1, name().c_str(), "max_tasks must be >= 1, got ", n);
  if (used_) flush();
  max_tasks_ = n;
}

KernelBackend::Batch& KernelBackend::batch() {
  if (!current_) {
    if (!free_batches_.empty()) {
      current_ = std::move(free_batches_.front());
      free_batches_.pop_front();
    } else {
      current_ = std::make_unique<Batch>();
    }
    try {
      open_batch(*current_);
    } catch (...) {
      free_batches_.push_back(std::move(current_));
      throw;
    }
  }
  return *current_;
}

void KernelBackend::count_op() {
  if (current_ && ++current_->ops >= max_tasks_) flush();
}

void KernelBackend::release(Batch& b) {
  reset_batch(b);
  for (Buffer s : b.scratch) free_scratch(s);
  for (const ArenaBlock& a : b.arenas) free_arena(a);
  for (Buffer h : b.host_blocks) free_host_block(h);
  b.scratch.clear();
  b.arenas.clear();
  b.host_blocks.clear();
  b.arena_used = 0;
  b.ops = 0;
  // Last: dropping tensors may free their storage (deallocate).
  std::vector<Tensor> keep;
  keep.swap(b.keep);
  keep.clear();
}

void KernelBackend::keep_alive(Batch& b, const Tensor& t) {
  if (!stream_ordered()) b.keep.push_back(t);
}

void KernelBackend::flush() {
  if (!current_) return;
  std::unique_ptr<Batch> b = std::move(current_);
  try {
    submit_batch(*b);
  } catch (...) {
    // The batch never ran: drop its resources so the device stays usable (or is marked lost).
    release(*b);
    free_batches_.push_back(std::move(b));
    throw;
  }
  submissions_++;
  in_flight_.push_back(std::move(b));
  retire(false);
}

void KernelBackend::retire(bool wait_all) {
  while (!in_flight_.empty()) {
    if (!batch_done(*in_flight_.front(), wait_all)) return;
    std::unique_ptr<Batch> done = std::move(in_flight_.front());
    in_flight_.pop_front();
    release(*done);
    free_batches_.push_back(std::move(done));
    after_retire();
  }
}

void KernelBackend::drop_open_and_wait() noexcept {
  try {
    if (current_) {
      discard_batch(*current_);
      release(*current_);
      free_batches_.push_back(std::move(current_));
    }
    retire(true);
  } catch (...) {
  }
}

void KernelBackend::destroy_batches() {
  free_batches_.clear();
  in_flight_.clear();
  current_.reset();
}

void KernelBackend::sync_device() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  check_alive();
  if (!used_) return;
  flush();
  retire(true);
  check_device_errors();
  run_deferred_checks();
}

std::pair<KernelBackend::ArenaBlock, int64_t> KernelBackend::params(
    Batch& b, const std::vector<uint32_t>& words) {
  const int64_t align = std::max<int64_t>(arena_alignment(), 16);
  const int64_t n = int64_t(std::max<size_t>(words.size(), 1)) * 4;
  EMBER_CHECK(n <= int64_t(codegen::kParamsBytes), name().c_str(), "a kernel's params take ", n,
              " bytes; at most ", codegen::kParamsBytes, " are supported");
  if (b.arenas.empty() || b.arena_used + int64_t(codegen::kParamsBytes) > b.arenas.back().bytes) {
    b.arenas.push_back(alloc_arena(kArenaBytes));
    b.arena_used = 0;
  }
  const ArenaBlock& blk = b.arenas.back();
  const int64_t at = b.arena_used;
  if (words.empty())
    std::memset(blk.host + at, 0, 4);
  else
    std::memcpy(blk.host + at, words.data(), words.size() * 4);
  b.arena_used = (at + n + align - 1) / align * align;
  return {blk, at};
}

void KernelBackend::run(const codegen::Lowering& l) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  start_use();
  const std::string who_name = name();
  const char* who = who_name.c_str();
  std::vector<const void*> programs;
  for (const auto& launch : l.launches) {
    EMBER_CHECK(launch.kernel, who, "a launch without a kernel");
    EMBER_CHECK(launch.bindings.size() == launch.kernel->buffers.size(), who, "kernel ",
                launch.kernel->name, " has ", launch.kernel->buffers.size(), " buffers but ",
                launch.bindings.size(), " bindings");
    for (const auto& b : launch.bindings) {
      if (b.scratch >= 0) {
        EMBER_CHECK(size_t(b.scratch) < l.scratch_bytes.size(), who, "kernel ", launch.kernel->name,
                    " binds scratch ", b.scratch, " of ", l.scratch_bytes.size());
      } else {
        EMBER_CHECK(b.tensor.defined() && b.tensor.device() == device(), who, "kernel ",
                    launch.kernel->name, " binds a tensor that is not on ", device().str());
      }
    }
    check_launch(launch);
    programs.push_back(compile(*launch.kernel));
  }
  Batch& b = batch();
  std::vector<Buffer> scratch;
  for (int64_t bytes : l.scratch_bytes) {
    scratch.push_back(alloc_scratch(bytes));
    b.scratch.push_back(scratch.back());
  }
  LaunchArgs a;
  for (size_t i = 0; i < l.launches.size(); ++i) {
    const codegen::Launch& launch = l.launches[i];
    if (launch.groups == 0) continue;
    a.kernel = launch.kernel.get();
    a.program = programs[i];
    a.buffers.clear();
    a.buffer_bytes.clear();
    for (const codegen::Binding& bd : launch.bindings) {
      if (bd.scratch >= 0) {
        a.buffers.push_back(scratch[size_t(bd.scratch)]);
        a.buffer_bytes.push_back(l.scratch_bytes[size_t(bd.scratch)]);
      } else {
        a.buffers.push_back(bd.tensor.impl()->storage->data());
        a.buffer_bytes.push_back(bd.tensor.impl()->storage->nbytes);
        keep_alive(b, bd.tensor);
      }
    }
    std::tie(a.params, a.params_offset) = params(b, launch.params);
    a.params_bytes = int64_t(std::max<size_t>(launch.params.size(), 1)) * 4;
    a.groups = launch.groups;
    record(b, a);
  }
  count_op();
}

bool KernelBackend::fusible(const ir::Op& op) const {
  const codegen::Caps& c = caps();
  auto ok = [&](const Tensor& t) { return codegen::supports(t.dtype(), c); };
  if (auto* x = std::get_if<ir::Copy>(&op)) return ok(x->src) && ok(x->dst);
  if (auto* x = std::get_if<ir::Fill>(&op)) return ok(x->dst);
  if (auto* x = std::get_if<ir::Unary>(&op)) return ok(x->src) && ok(x->dst);
  if (auto* x = std::get_if<ir::Binary>(&op))
    return x->a.dtype() == x->b.dtype() && ok(x->a) && ok(x->dst);
  if (auto* x = std::get_if<ir::Where>(&op))
    return x->cond.dtype() == DType::b8 && x->a.dtype() == x->dst.dtype() &&
           x->b.dtype() == x->dst.dtype() && ok(x->cond) && ok(x->dst);
  return false;
}

bool KernelBackend::reducible(const ir::Reduce& op) const {
  using ir::ReduceOp;
  const bool foldable = op.op == ReduceOp::sum || op.op == ReduceOp::prod ||
                        op.op == ReduceOp::max || op.op == ReduceOp::min;
  const DType t = op.src.dtype();
  return foldable && !op.indices.defined() && t != DType::b8 && op.dst.dtype() == t &&
         op.src.numel() > 0 && codegen::supports(t, caps());
}

int64_t KernelBackend::max_graph_buffers() const { return int64_t(caps().max_buffers); }

bool KernelBackend::execute_graph(const ir::FusedGraph& g) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  check_alive();
  std::string key = g.key();
  if (unsupported_graphs_.count(key)) return false;
  codegen::Lowering l;
  try {
    l = codegen::lower_graph(g, dialect(), caps());
  } catch (const Error&) {
    unsupported_graphs_.insert(std::move(key));
    return false;
  }
  // A reduction's variant is autotuned unless the graph writes one of its inputs (tuning runs
  // it several times); tuning runs the reduction alone, `after` once with the choice. Errors
  // while tuning (EMBER_CHECK's mismatches) propagate.
  if (!g.reductions.empty() && !profiling() && !writes_an_input(g)) {
    const auto& r = g.reductions[0];
    std::vector<codegen::ReduceVariant> vs;
    const codegen::ReduceVariant* v = tuned_reduce(
        r.op, r.dst.dtype(), g.shape, r.dims, r.dst, int64_t(g.inputs.size() + g.outputs.size()),
        codegen::graph_element_loops(g, caps()) > 0, vs, [&](const codegen::ReduceVariant& c) {
          run(codegen::lower_graph_reduce(g, dialect(), caps(), &c));
        });
    if (v && v != &vs[0]) l = codegen::lower_graph(g, dialect(), caps(), v);
  }
  run(l);
  return true;
}

namespace {

// Products smaller than this (multiply-adds), or with fewer outputs (a few tiles: the variants
// hardly differ, and a long K makes each timed run slow), run their default variant untimed.
constexpr int64_t kTuneMinWork = int64_t(1) << 18;
constexpr int64_t kTuneMinOutputs = 4096;

const char* reduce_name(ir::ReduceOp op) {
  switch (op) {
    case ir::ReduceOp::sum:
      return "sum";
    case ir::ReduceOp::prod:
      return "prod";
    case ir::ReduceOp::max:
      return "max";
    case ir::ReduceOp::min:
      return "min";
    case ir::ReduceOp::any:
      return "any";
    case ir::ReduceOp::all:
      return "all";
  }
  return "reduce";
}

}  // namespace

std::vector<double> KernelBackend::device_values(const Tensor& t) {
  sync_device();
  const Storage& st = *t.impl()->storage;
  std::vector<unsigned char> bytes(size_t(st.nbytes));
  if (st.nbytes > 0) read_bytes(st.data(), 0, bytes.data(), st.nbytes);
  return strided_values(bytes, t);
}

bool KernelBackend::writes_an_input(const ir::FusedGraph& g) {
  for (const auto& o : g.outputs)
    for (const Tensor& in : g.inputs)
      if (o.dst.impl()->storage == in.impl()->storage) return true;
  return false;
}

const codegen::ReduceVariant* KernelBackend::tuned_reduce(
    ir::ReduceOp op, DType t, const Shape& shape, const std::vector<int64_t>& dims,
    const Tensor& dst, int64_t sources, bool heavy, std::vector<codegen::ReduceVariant>& vs,
    const std::function<void(const codegen::ReduceVariant&)>& run) {
  const int64_t n = numel_of(shape), n_out = dst.numel();
  if (n < kTuneMinWork || n_out == 0) return nullptr;
  const int64_t R = n / n_out;
  vs = codegen::reduce_variants(n_out, R, caps());
  // A split binds its partials too (max/min: values and indices).
  const bool extreme = op == ir::ReduceOp::max || op == ir::ReduceOp::min;
  if (sources + (extreme ? 2 : 1) > int64_t(caps().max_buffers))
    vs.erase(std::remove_if(vs.begin() + 1, vs.end(),
                            [](const codegen::ReduceVariant& v) { return v.split_steps > 0; }),
             vs.end());
  if (vs.size() <= 1) return nullptr;
  // Whether the innermost non-trivial dim is reduced (rows vs columns read differently).
  bool inner = false;
  for (size_t k = shape.size(); k-- > 0;)
    if (shape[k] > 1) {
      inner = std::find(dims.begin(), dims.end(), int64_t(k)) != dims.end();
      break;
    }
  std::vector<autotune::Candidate> cs;
  for (size_t i = 0; i < vs.size(); ++i)
    cs.push_back({vs[i].name, i <= 1 ? autotune::Effort::minimal : autotune::Effort::balanced});
  autotune::Bench bench;
  bench.run = [&](size_t i) { run(vs[i]); };
  bench.sync = [&] { sync_device(); };
  bench.warmup = 1;  // compiles the kernel
  bench.result = [&] { return device_values(dst); };
  const bool half = t == DType::f16 || t == DType::bf16;
  bench.rtol = half ? 1e-2 : 1e-4;
  bench.atol = half ? 1e-2 : 1e-5;
  bench.detail = [&] {
    std::string s = std::string(reduce_name(op)) + " " + dtype_name(t) + " [";
    for (size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
    return s + "] over " + std::to_string(dims.size()) + " dims";
  };
  const std::string key = "o" + std::to_string(autotune::anchor(n_out)) + ".r" +
                          std::to_string(autotune::anchor(R)) + (inner ? ".inner" : ".outer") +
                          (heavy ? ".loops" : "");
  const size_t i = autotune::for_device(device()).pick(
      "reduce", std::string(reduce_name(op)) + "." + dtype_name(t), key, cs, bench);
  return &vs[i];
}

bool KernelBackend::run_reduce_tuned(const ir::Op& op) {
  const auto* r = std::get_if<ir::Reduce>(&op);
  if (!r || !codegen::supports(r->src.dtype(), caps()) ||
      !codegen::supports(r->dst.dtype(), caps()))
    return false;
  std::vector<codegen::ReduceVariant> vs;
  auto lower = [&](const codegen::ReduceVariant& v) {
    return codegen::lower_reduce(*r, dialect(), caps(), &v);
  };
  const codegen::ReduceVariant* v =
      tuned_reduce(r->op, r->src.dtype(), r->src.shape(), r->dims, r->dst, 1, false, vs,
                   [&](const codegen::ReduceVariant& c) { run(lower(c)); });
  if (!v) return false;
  run(lower(*v));
  return true;
}

int64_t KernelBackend::tuned_matmul(const ir::Matmul& mm, bool& native,
                                    std::vector<codegen::MatmulVariant>& vs) {
  const Tensor &a = mm.a, &d = mm.dst;
  const int64_t B = d.size(0), M = d.size(1), N = d.size(2), K = a.size(2);
  native = false;
  vs.clear();
  if (B * M * N < kTuneMinOutputs || B * M * N * K < kTuneMinWork ||
      !codegen::supports(d.dtype(), caps()))
    return -1;
  const ir::Op op = mm;
  native = native_applies(op);
  vs = codegen::matmul_variants(mm, caps());
  std::vector<autotune::Candidate> cs;
  if (native) cs.push_back({"library"});
  for (size_t i = 0; i < vs.size(); ++i) {
    // The default's runner-up at minimal effort, the other tiles at balanced, "simple" (a thread
    // per output: slow for any product big enough to be tuned) only at full.
    const autotune::Effort e = vs[i].name == "simple" ? autotune::Effort::full
                               : i <= 1               ? autotune::Effort::minimal
                                                      : autotune::Effort::balanced;
    cs.push_back({vs[i].name, e});
  }
  if (cs.size() <= 1) return -1;
  // Timing runs the plain matmul into mm.dst, which it overwrites each time (an anchored
  // group's dst is dead, so that is safe there too).
  autotune::Bench bench;
  bench.run = [&](size_t i) { run_matmul_candidate(mm, native, vs, i); };
  bench.sync = [&] { sync_device(); };
  bench.warmup = 1;  // compiles the kernel
  bench.result = [&] { return device_values(d); };
  const bool half = d.dtype() == DType::f16 || d.dtype() == DType::bf16;
  bench.rtol = half ? 1e-2 : 1e-4;
  bench.max_rtol = (half ? 1e-2 : 1e-5) * (1.0 + std::sqrt(double(K)));
  bench.detail = [&] {
    return std::string(dtype_name(d.dtype())) + " [" + std::to_string(B) + ", " +
           std::to_string(M) + ", " + std::to_string(K) + "] @ [" + std::to_string(B) + ", " +
           std::to_string(K) + ", " + std::to_string(N) + "]";
  };
  const std::string shape =
      "b" + std::to_string(autotune::anchor(B)) + ".m" + std::to_string(autotune::anchor(M)) +
      ".n" + std::to_string(autotune::anchor(N)) + ".k" + std::to_string(autotune::anchor(K));
  return int64_t(
      autotune::for_device(device()).pick("matmul", dtype_name(d.dtype()), shape, cs, bench));
}

void KernelBackend::run_matmul_candidate(const ir::Matmul& mm, bool native,
                                         const std::vector<codegen::MatmulVariant>& vs, size_t i) {
  if (native && i == 0) {
    if (!execute_native(ir::Op(mm))) EMBER_FAIL("matmul", "the library declined a product it took");
    return;
  }
  run(codegen::lower_matmul(mm, dialect(), caps(), vs[i - (native ? 1 : 0)]));
}

bool KernelBackend::run_matmul_tuned(const ir::Op& op) {
  const auto* mm = std::get_if<ir::Matmul>(&op);
  if (!mm) return false;
  bool native = false;
  std::vector<codegen::MatmulVariant> vs;
  const int64_t i = tuned_matmul(*mm, native, vs);
  if (i < 0) return false;
  run_matmul_candidate(*mm, native, vs, size_t(i));
  return true;
}

bool KernelBackend::anchorable(const ir::Op& op) const {
  const auto* mm = std::get_if<ir::Matmul>(&op);
  if (!mm || profiling()) return false;
  const DType t = mm->dst.dtype();
  const bool is_float = t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::f64;
  return is_float && codegen::supports(t, caps()) && mm->a.dtype() == t && mm->b.dtype() == t &&
         mm->dst.numel() > 0 && mm->a.size(2) > 0;
}

bool KernelBackend::execute_anchored(const ir::Op& anchor, const ir::FusedGraph& g,
                                     int32_t anchor_input) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  check_alive();
  const auto* mm = std::get_if<ir::Matmul>(&anchor);
  if (!mm || !codegen::matmul_epilogue_applies(*mm, g, anchor_input, caps())) return false;
  start_use();
  // The tile the autotuner chose for the plain matmul of this key (tuning it if new: the plain
  // matmul overwrites the dead dst, the epilogue never runs twice). When the library (CLBlast)
  // won the key, false: the stream runs CLBlast, then the epilogue as a graph (PoCL, 256 x 1024
  // x 256: CLBlast 13 ms, the generated tiles 55-63 ms, far more than an epilogue pass costs).
  // A product too small to tune takes the generated default tile, library or not (untimed
  // against CLBlast: at that size launches, not the GEMM, dominate).
  bool native = false;
  std::vector<codegen::MatmulVariant> vs;
  const int64_t i = tuned_matmul(*mm, native, vs);
  if (native && i == 0) return false;
  const codegen::MatmulVariant v =
      i >= 0 ? vs[size_t(i) - (native ? 1 : 0)] : codegen::matmul_variants(*mm, caps())[0];
  const std::string key = v.name + "_" + dtype_name(mm->dst.dtype()) + "_" + g.key();
  if (unsupported_graphs_.count(key)) return false;
  codegen::Lowering l;
  try {
    l = codegen::lower_matmul_epilogue(*mm, g, anchor_input, dialect(), caps(), v);
  } catch (const Error&) {
    unsupported_graphs_.insert(key);  // a dtype or function the device lacks
    return false;
  }
  run(l);
  return true;
}

void KernelBackend::run_op(const ir::Op& op) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  check_alive();
  if (!profiling()) {
    start_use();
    if (run_matmul_tuned(op) || run_reduce_tuned(op)) return;
    if (execute_native(op)) return;
    return run(codegen::lower(op, dialect(), caps()));
  }
  // Each op lowered, run and waited for alone, both timed.
  if (used_) sync_device();
  auto t0 = Clock::now();
  const codegen::Lowering l = codegen::lower(op, dialect(), caps());
  const double lower_s = since(t0);
  t0 = Clock::now();
  run(l);
  sync_device();
  profile_op(op, l, lower_s, since(t0));
}

}  // namespace ember::runtime
