// ProcessGroup's collectives: argument checks, then each tensor as a contiguous host buffer for
// the engine (its own storage when it is one already, else a staging copy written back in
// wait()), then a job for the communication thread.

#include "dist/group.h"
#include "ember/autograd.h"
#include "ember/error.h"

namespace ember::dist {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return "sum";
    case ReduceOp::mean:
      return "mean";
    case ReduceOp::max:
      return "max";
    case ReduceOp::min:
      return "min";
  }
  return "?";
}

namespace {

using Engine = ProcessGroup::Engine;

// "float32 [2, 3] on cpu".
std::string describe(const Tensor& t) {
  return std::string(dtype_name(t.dtype())) + " " + shape_str(t.shape()) + " on " +
         t.device().str();
}

// A sync op is an async one waited at once: the same queue keeps the call order.
Work finish_call(Work w, bool async_op) {
  if (!async_op) w.wait();
  return w;
}

// ---- argument checks ----

// Every rank must make the same call: the same collective on as many elements of one dtype with
// one op. A mismatch is undefined in MPI (it wrote past a buffer: "malloc(): corrupted top size")
// and ends the process in Gloo's I/O thread, so the communication thread checks each call first
// with one 8-value all-reduce (the max of each value and of its negation), which tells every rank
// alike; then the op's error breaks the group on all of them.
void check_same_call(Engine& en, const char* name, int64_t count, DType dtype, int op,
                     double timeout) {
  if (en.size() == 1) return;
  uint32_t h = 2166136261u;  // FNV-1a of the collective's name
  for (const char* c = name; *c; ++c) h = (h ^ uint8_t(*c)) * 16777619u;
  const int64_t mine[4] = {int64_t(h), count, int64_t(dtype), op};
  int64_t v[8];
  for (int i = 0; i < 4; ++i) v[i] = mine[i], v[4 + i] = -mine[i];
  en.all_reduce(name, v, 8, DType::i64, ReduceOp::max, timeout);
  if (v[0] != -v[4])
    EMBER_FAIL(name,
               "the ranks called different collectives at this point (every rank must call "
               "the same ones in the same order)");
  if (v[1] != -v[5])
    EMBER_FAIL(name, "the ranks passed tensors of different sizes (", -v[5], " to ", v[1],
               " elements; this rank ", count, "): every rank needs the same shape");
  if (v[2] != -v[6])
    EMBER_FAIL(name, "the ranks passed tensors of different dtypes (this rank ", dtype_name(dtype),
               "): every rank needs the same dtype");
  if (v[3] != -v[7]) {
    if (op < 0)  // broadcast's source, -src - 1
      EMBER_FAIL(name, "the ranks named different source ranks (this rank: src ", -op - 1, ")");
    EMBER_FAIL(name, "the ranks asked for different reduce ops (this rank ",
               reduce_op_name(ReduceOp(op)), ")");
  }
}

void check_tensor(const Tensor& t, const char* op, const char* what) {
  if (!t.defined()) EMBER_FAIL(op, what, " is undefined");
}

void check_like(const Tensor& t, const Tensor& like, const char* op, const std::string& what,
                const char* like_what) {
  check_tensor(t, op, what.c_str());
  if (t.shape() != like.shape() || t.dtype() != like.dtype())
    EMBER_FAIL(op, what, " is ", describe(t), " but ", like_what, " is ", describe(like),
               ": every tensor must have the same shape and dtype");
}

void check_reduce_op(const Tensor& t, ReduceOp red, const char* op) {
  if (red == ReduceOp::mean && !is_floating(t.dtype()))
    EMBER_FAIL(op, "mean needs a floating-point tensor, got ", describe(t),
               "; reduce with sum and divide, or convert to a float dtype first");
}

// big.shape = [world * small.shape[0], small.shape[1:]...] (a 0-d small: big is [world]).
void check_stacked(const Tensor& big, const char* big_what, const Tensor& small,
                   const char* small_what, int world, const char* op) {
  check_tensor(big, op, big_what);
  Shape want = small.shape();
  if (want.empty()) want = {1};
  want[0] *= world;
  if (big.shape() != want || big.dtype() != small.dtype())
    EMBER_FAIL(op, big_what, " is ", describe(big), " but must be ", dtype_name(small.dtype()), " ",
               shape_str(want), " (world size ", world, " x ", small_what, " ", describe(small),
               " along dim 0)");
}

// ---- host buffers ----

Device host_device(const Tensor& t) { return t.device().is_host() ? t.device() : Device::cpu(); }

// t itself when it is a contiguous host tensor of `dtype`, else a contiguous host copy
// converted to `dtype` (with_values) or a new buffer of that shape (for outputs).
Tensor host_buffer(const Tensor& t, DType dtype, bool with_values) {
  if (t.device().is_host() && t.is_contiguous() && t.dtype() == dtype) return t;
  NoGradGuard no_grad;
  if (!with_values) return empty(t.shape(), {dtype, host_device(t)});
  return t.to(host_device(t)).to(dtype).contiguous();
}

bool staged(const Tensor& buf, const Tensor& t) { return buf.impl() != t.impl(); }

// The pointer the engine uses; the caller's thread reads it (running Ember's lazy stream first).
void* host_ptr(const Tensor& buf) { return buf.numel() == 0 ? nullptr : buf.raw_data(); }

// After the engine wrote `buf`: copy it into `t` when staged, else mark the in-place write.
void write_back(const Tensor& t, const Tensor& buf) {
  NoGradGuard no_grad;
  if (staged(buf, t)) {
    Tensor(t).copy_(buf);
  } else {
    ++t.impl()->storage->version;  // autograd sees the write
    (void)host_ptr(t);             // counts the write (Storage::writes)
  }
}

// The dtype the engine reduces `t` in: its own, f16/bf16 in f32, bool as u8 (bytes 0/1), narrow
// integers in i64 (same wrap-around for sums, exact max/min).
DType reduce_dtype(const Engine& e, DType t, const char* op) {
  if (e.reduces(t)) return t;
  if ((t == DType::f16 || t == DType::bf16) && e.reduces(DType::f32)) return DType::f32;
  if (t == DType::b8 && e.reduces(DType::u8)) return DType::u8;
  if (is_integral(t) && dtype_size(t) < 8 && e.reduces(DType::i64)) return DType::i64;
  EMBER_FAIL(op, "the ", e.name(), " engine cannot reduce ", dtype_name(t), " tensors");
}

// The host buffer's dtype: the reduce dtype, except bool stays bool (the engine reads its bytes).
DType buffer_dtype(DType t, DType red) { return t == DType::b8 && red == DType::u8 ? t : red; }

// On bool, sum and max are or, min is and: max and min of bytes 0/1.
ReduceOp engine_op(DType t, ReduceOp op) {
  if (op == ReduceOp::mean) return ReduceOp::sum;
  if (t == DType::b8 && op == ReduceOp::sum) return ReduceOp::max;
  return op;
}

// mean = sum / world, in the dtype the engine reduced in (f16 and bf16 when it reduces them).
template <typename T>
void divide_as(void* data, int64_t count, int world) {
  T* p = static_cast<T*>(data);
  for (int64_t i = 0; i < count; ++i) p[i] = T(float(p[i]) / float(world));
}
void divide(void* data, int64_t count, DType dtype, int world) {
  if (world == 1) return;
  switch (dtype) {
    case DType::f64: {
      double* p = static_cast<double*>(data);
      for (int64_t i = 0; i < count; ++i) p[i] /= world;
      return;
    }
    case DType::f32:
      return divide_as<float>(data, count, world);
    case DType::f16:
      return divide_as<Half>(data, count, world);
    case DType::bf16:
      return divide_as<BFloat16>(data, count, world);
    default:
      return;  // mean is refused on other dtypes
  }
}

// [world, shape...]: the stacked buffer behind the list collectives.
Shape stacked_shape(int world, const Shape& s) {
  Shape out{world};
  out.insert(out.end(), s.begin(), s.end());
  return out;
}

// The engine gathers every rank's `in` (input's host buffer) into `out` ([world, ...] host
// buffer); `finish` then writes `out` where the caller wants it.
Work all_gather_job(ProcessGroup::Impl& g, const char* name, const Tensor& input, const Tensor& out,
                    const Tensor& in, std::function<void()> finish, bool async_op) {
  const void* pi = host_ptr(in);
  void* po = host_ptr(out);
  const int64_t bytes = in.numel() * in.element_size();
  const double timeout = g.core->timeout_seconds;
  const DType ud = input.dtype();
  auto s = g.make_state(name);
  s->run = [=](Engine& en) {
    check_same_call(en, name, bytes, ud, -1, timeout);
    en.all_gather(name, pi, po, bytes, timeout);
  };
  s->finish = std::move(finish);
  s->keep = {input, out, in};
  return finish_call(g.submit(std::move(s)), async_op);
}

// The engine reduces `in` ([world, n] host buffer) into `out`, written back into `output`.
Work reduce_scatter_job(ProcessGroup::Impl& g, const char* name, const Tensor& output,
                        const Tensor& out, const Tensor& in, DType rd, ReduceOp op, bool async_op) {
  const void* pi = host_ptr(in);
  void* po = host_ptr(out);
  const int64_t n = out.numel();
  const ReduceOp eop = engine_op(output.dtype(), op);
  const double timeout = g.core->timeout_seconds;
  const int world = g.size;
  const DType ud = output.dtype();
  auto s = g.make_state(name);
  s->run = [=](Engine& en) {
    check_same_call(en, name, n, ud, int(op), timeout);
    en.reduce_scatter(name, pi, po, n, rd, eop, timeout);
    if (op == ReduceOp::mean) divide(po, n, rd, world);
  };
  s->finish = [output, out] { write_back(output, out); };
  s->keep = {output, out, in};
  return finish_call(g.submit(std::move(s)), async_op);
}

}  // namespace

ProcessGroup::ProcessGroup(std::unique_ptr<Engine> engine, double timeout_seconds)
    : impl_(std::make_unique<Impl>(std::move(engine), timeout_seconds)) {}
ProcessGroup::~ProcessGroup() = default;

std::string ProcessGroup::backend() const { return impl_->backend; }
int ProcessGroup::rank() const { return impl_->rank; }
int ProcessGroup::world_size() const { return impl_->size; }
int ProcessGroup::local_rank() const { return impl_->local_rank; }
int ProcessGroup::local_world_size() const { return impl_->local_size; }
double ProcessGroup::timeout_seconds() const { return impl_->core->timeout_seconds; }
void ProcessGroup::abort(const std::string& reason) {
  std::unique_lock<std::mutex> lk(impl_->core->mu);
  if (impl_->core->broken) return;
  impl_->core->fail(lk, "[dist] rank " + std::to_string(impl_->rank) + " failed: " + reason);
}

bool ProcessGroup::broken() const {
  std::lock_guard<std::mutex> lk(impl_->core->mu);
  return impl_->core->broken;
}

Work ProcessGroup::all_reduce(const Tensor& tensor, ReduceOp op, bool async_op) {
  const char* name = "dist::all_reduce";
  check_tensor(tensor, name, "tensor");
  check_reduce_op(tensor, op, name);
  Engine& e = *impl_->core->engine;
  const DType rd = reduce_dtype(e, tensor.dtype(), name);
  const ReduceOp eop = engine_op(tensor.dtype(), op);
  Tensor buf = host_buffer(tensor, buffer_dtype(tensor.dtype(), rd), true);
  void* p = host_ptr(buf);
  const int64_t n = buf.numel();
  const double timeout = timeout_seconds();
  const int world = world_size();
  const DType ud = tensor.dtype();
  auto s = impl_->make_state(name);
  s->run = [=](Engine& en) {
    check_same_call(en, name, n, ud, int(op), timeout);
    en.all_reduce(name, p, n, rd, eop, timeout);
    if (op == ReduceOp::mean) divide(p, n, rd, world);
  };
  s->finish = [tensor, buf] { write_back(tensor, buf); };
  s->keep = {tensor, buf};
  return finish_call(impl_->submit(std::move(s)), async_op);
}

Work ProcessGroup::broadcast(const Tensor& tensor, int src, bool async_op) {
  const char* name = "dist::broadcast";
  check_tensor(tensor, name, "tensor");
  if (src < 0 || src >= world_size())
    EMBER_FAIL(name, "src ", src, " is not a rank: the world size is ", world_size(), " (ranks 0..",
               world_size() - 1, ")");
  Tensor buf = host_buffer(tensor, tensor.dtype(), true);
  void* p = host_ptr(buf);
  const int64_t bytes = buf.numel() * buf.element_size();
  const double timeout = timeout_seconds();
  auto s = impl_->make_state(name);
  const DType ud = tensor.dtype();
  s->run = [=](Engine& en) {
    check_same_call(en, name, bytes, ud, -src - 1, timeout);
    en.broadcast(name, p, bytes, src, timeout);
  };
  s->finish = [tensor, buf] { write_back(tensor, buf); };
  s->keep = {tensor, buf};
  return finish_call(impl_->submit(std::move(s)), async_op);
}

Work ProcessGroup::all_gather(const std::vector<Tensor>& outputs, const Tensor& input,
                              bool async_op) {
  const char* name = "dist::all_gather";
  check_tensor(input, name, "input");
  if (int64_t(outputs.size()) != world_size())
    EMBER_FAIL(name, "outputs has ", outputs.size(), " tensors; it needs one per rank (",
               world_size(), ")");
  for (size_t r = 0; r < outputs.size(); ++r)
    check_like(outputs[r], input, name, "outputs[" + std::to_string(r) + "]", "input");
  Tensor out = empty(stacked_shape(world_size(), input.shape()), {input.dtype(), Device::cpu()});
  return all_gather_job(
      *impl_, name, input, out, host_buffer(input, input.dtype(), true),
      [outputs, out] {
        NoGradGuard no_grad;
        for (size_t r = 0; r < outputs.size(); ++r)
          Tensor(outputs[r]).copy_(out.select(0, int64_t(r)));
      },
      async_op);
}

Work ProcessGroup::all_gather_into_tensor(const Tensor& output, const Tensor& input,
                                          bool async_op) {
  const char* name = "dist::all_gather_into_tensor";
  check_tensor(input, name, "input");
  check_stacked(output, "output", input, "input", world_size(), name);
  Tensor out = host_buffer(output, output.dtype(), false);
  Tensor in = host_buffer(input, input.dtype(), true);
  if (in.is_alias_of(out)) in = in.clone();  // the engine's input and output never overlap
  return all_gather_job(
      *impl_, name, input, out, in, [output, out] { write_back(output, out); }, async_op);
}

Work ProcessGroup::reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                  ReduceOp op, bool async_op) {
  const char* name = "dist::reduce_scatter";
  check_tensor(output, name, "output");
  check_reduce_op(output, op, name);
  if (int64_t(inputs.size()) != world_size())
    EMBER_FAIL(name, "inputs has ", inputs.size(), " tensors; it needs one per rank (",
               world_size(), ")");
  for (size_t r = 0; r < inputs.size(); ++r)
    check_like(inputs[r], output, name, "inputs[" + std::to_string(r) + "]", "output");
  Engine& e = *impl_->core->engine;
  const DType rd = reduce_dtype(e, output.dtype(), name);
  const DType bd = buffer_dtype(output.dtype(), rd);
  Tensor in = empty(stacked_shape(world_size(), output.shape()), {bd, Device::cpu()});
  {
    NoGradGuard no_grad;
    for (size_t r = 0; r < inputs.size(); ++r) in.select(0, int64_t(r)).copy_(inputs[r]);
  }
  Tensor out = host_buffer(output, bd, false);
  return reduce_scatter_job(*impl_, name, output, out, in, rd, op, async_op);
}

Work ProcessGroup::reduce_scatter_tensor(const Tensor& output, const Tensor& input, ReduceOp op,
                                         bool async_op) {
  const char* name = "dist::reduce_scatter_tensor";
  check_tensor(output, name, "output");
  check_reduce_op(output, op, name);
  check_stacked(input, "input", output, "output", world_size(), name);
  Engine& e = *impl_->core->engine;
  const DType rd = reduce_dtype(e, output.dtype(), name);
  const DType bd = buffer_dtype(output.dtype(), rd);
  Tensor in = host_buffer(input, bd, true);
  Tensor out = host_buffer(output, bd, false);
  if (out.is_alias_of(in)) out = empty(output.shape(), {bd, Device::cpu()});
  return reduce_scatter_job(*impl_, name, output, out, in, rd, op, async_op);
}

void ProcessGroup::barrier() {
  const char* name = "dist::barrier";
  const double timeout = timeout_seconds();
  auto s = impl_->make_state(name);
  s->run = [=](Engine& en) { en.barrier(name, timeout); };
  impl_->submit(std::move(s)).wait();
}

}  // namespace ember::dist
