// Compiling and running graphs and subgraphs (program.h), and the control-flow ops If, Loop and
// Scan (ONNX operators spec, opsets 1-17: https://onnx.ai/onnx/operators/).
#include "onnx/program.h"

#include <algorithm>
#include <limits>
#include <set>
#include <unordered_map>

#include "onnx/proto.h"

namespace ember::onnx::detail {

namespace {

// Ops whose result differs from run to run: never folded.
bool foldable(const ::onnx::NodeProto& n) {
  return n.op_type().rfind("Random", 0) != 0 && n.op_type() != "Multinomial" &&
         n.op_type() != "Bernoulli";
}

const ::onnx::GraphProto* graph_attr(const ::onnx::NodeProto& n, const char* name) {
  for (const auto& a : n.attribute())
    if (a.name() == name && a.has_g()) return &a.g();
  return nullptr;
}

std::vector<std::string> input_names(const ::onnx::GraphProto& g) {
  std::vector<std::string> v;
  for (const auto& i : g.input()) v.push_back(i.name());
  return v;
}

Tensors run_control(const Step& s, const Tensors& ins, Device device, bool each);

Tensors run_step(const Step& s, const Tensors& ins, Device device, bool each) {
  return s.op ? s.op->run(s.node, ins) : run_control(s, ins, device, each);
}

// The captures of body b of step s, from the step's inputs.
Tensors captures_of(const Step& s, size_t b, const Tensors& ins) {
  Tensors c;
  for (size_t k : s.body_captures[b]) c.push_back(ins[k]);
  return c;
}

bool truth(const Tensor& t, const char* what) {
  EMBER_CHECK(t.defined() && t.numel() == 1, "onnx", what, " must hold one value, got ",
              t.defined() ? shape_str(t.shape()) : std::string("none"));
  return t.to(Device::ref()).to(DType::b8).reshape({}).item<bool>();
}

// Stacks per-iteration values along a new axis (an empty list: a [0] tensor).
Tensor stack_along(const Tensors& parts, int64_t axis, Device device) {
  if (parts.empty()) return empty({0}, TensorOptions(DType::f32, device));
  std::vector<Tensor> u;
  for (const Tensor& t : parts) u.push_back(t.unsqueeze(wrap(axis, t.dim() + 1)));
  return cat(u, wrap(axis, parts[0].dim() + 1));
}

// A Loop's scan output after zero iterations: [0] followed by the shape the body declares for
// it (or ONNX's shape inference found at load), of its element type, as ONNX Runtime does; a
// symbolic dim is 0 (there are no elements either way). Without any shape the rank cannot be
// known without running the body: [0], as ONNX Runtime gives; float when the type is unknown.
Tensor empty_scan_output(const ::onnx::ValueInfoProto& v, Device device) {
  Shape shape{0};
  DType dtype = DType::f32;
  if (v.type().has_tensor_type()) {
    const auto& tt = v.type().tensor_type();
    DType declared;
    if (dtype_from_onnx(tt.elem_type(), declared)) dtype = declared;
    if (tt.has_shape())
      for (const auto& d : tt.shape().dim())
        shape.push_back(d.has_dim_value() && d.dim_value() >= 0 ? d.dim_value() : 0);
  }
  return empty(shape, TensorOptions(dtype, device));
}

Tensors run_if(const Step& s, const Tensors& ins, Device device, bool each) {
  const size_t b = truth(ins[0], "If's cond") ? 0 : 1;
  return execute(*s.bodies[b], {}, captures_of(s, b, ins), device, each);
}

// Loop(M, cond, v...): body(i, cond, v...) -> (cond, v..., scan outputs...) while i < M and cond.
Tensors run_loop(const Step& s, const Tensors& ins, Device device, bool each) {
  const int64_t max_trips =
      ins.size() > 0 && ins[0].defined()
          ? ins[0].to(Device::ref()).to(DType::i64).reshape({}).item<int64_t>()
          : std::numeric_limits<int64_t>::max();
  bool cond = ins.size() > 1 && ins[1].defined() ? truth(ins[1], "Loop's cond") : true;
  const size_t n_carried = s.explicit_inputs - 2;
  Tensors carried(ins.begin() + 2, ins.begin() + 2 + int64_t(n_carried));
  const Program& body = *s.bodies[0];
  const size_t n_scan = body.output_slots.size() - 1 - n_carried;
  std::vector<Tensors> scans(n_scan);
  const Tensors caps = captures_of(s, 0, ins);
  for (int64_t i = 0; i < max_trips && cond; ++i) {
    Tensors bin = {scalar_tensor(i, TensorOptions(DType::i64, device)),
                   scalar_tensor(cond, TensorOptions(DType::b8, device))};
    bin.insert(bin.end(), carried.begin(), carried.end());
    const Tensors out = execute(body, bin, caps, device, each);
    cond = truth(out[0], "Loop body's cond");
    for (size_t k = 0; k < n_carried; ++k) carried[k] = out[1 + k];
    for (size_t k = 0; k < n_scan; ++k) scans[k].push_back(out[1 + n_carried + k]);
  }
  Tensors outs = carried;
  const ::onnx::GraphProto& g = *graph_attr(*s.proto, "body");
  for (size_t k = 0; k < n_scan; ++k)
    outs.push_back(scans[k].empty() ? empty_scan_output(g.output(int(1 + n_carried + k)), device)
                                    : stack_along(scans[k], 0, device));
  return outs;
}

// Scan (opset 9+): states and scan inputs; body(states..., slices...) -> (states..., outs...).
Tensors scan9(const Step& s, const Tensors& states0, const Tensors& xs, Device device, bool each,
              const Tensors& caps) {
  const ::onnx::NodeProto& n = *s.proto;
  const Node& node = s.node;
  const size_t m = xs.size();
  const auto in_axes = node.ints("scan_input_axes", std::vector<int64_t>(m, 0));
  const auto in_dirs = node.ints("scan_input_directions", std::vector<int64_t>(m, 0));
  const Program& body = *s.bodies[0];
  const size_t n_states = states0.size();
  const size_t k_out = body.output_slots.size() - n_states;
  const auto out_axes = node.ints("scan_output_axes", std::vector<int64_t>(k_out, 0));
  const auto out_dirs = node.ints("scan_output_directions", std::vector<int64_t>(k_out, 0));
  EMBER_CHECK(m > 0, "onnx", "Scan ", n.name(), " has no scan input");
  const int64_t len = xs[0].size(wrap(in_axes[0], xs[0].dim()));
  Tensors states = states0;
  std::vector<Tensors> outs(k_out);
  for (int64_t t = 0; t < len; ++t) {
    Tensors bin = states;
    for (size_t j = 0; j < m; ++j) {
      const int64_t ax = wrap(in_axes[j], xs[j].dim());
      EMBER_CHECK(xs[j].size(ax) == len, "onnx", "Scan's inputs differ in length");
      bin.push_back(xs[j].select(ax, in_dirs[j] ? len - 1 - t : t));
    }
    const Tensors r = execute(body, bin, caps, device, each);
    for (size_t k = 0; k < n_states; ++k) states[k] = r[k];
    for (size_t k = 0; k < k_out; ++k) outs[k].push_back(r[n_states + k]);
  }
  Tensors res = states;
  const ::onnx::GraphProto& g = *graph_attr(n, "body");
  for (size_t k = 0; k < k_out; ++k) {
    if (out_dirs[k]) std::reverse(outs[k].begin(), outs[k].end());
    if (!outs[k].empty()) {
      res.push_back(stack_along(outs[k], out_axes[k], device));
      continue;
    }
    // No iterations: the body output's shape with a 0 at the scan axis, as a Loop's (above).
    const Tensor e = empty_scan_output(g.output(int(n_states + k)), device);
    Shape shape(e.shape().begin() + 1, e.shape().end());
    if (g.output(int(n_states + k)).type().tensor_type().has_shape())
      shape.insert(shape.begin() + wrap(out_axes[k], int64_t(shape.size()) + 1), 0);
    else
      shape = {0};
    res.push_back(empty(shape, TensorOptions(e.dtype(), device)));
  }
  return res;
}

Tensors run_scan(const Step& s, const Tensors& ins, Device device, bool each) {
  const Node& node = s.node;
  const size_t m = size_t(node.i("num_scan_inputs", 0));
  const Tensors caps = captures_of(s, 0, ins);
  if (node.opset >= 9) {
    const size_t n_states = s.explicit_inputs - m;
    return scan9(s, Tensors(ins.begin(), ins.begin() + int64_t(n_states)),
                 Tensors(ins.begin() + int64_t(n_states), ins.begin() + int64_t(s.explicit_inputs)),
                 device, each, caps);
  }
  // Opset 8: a batch axis 0 first, then the sequence axis; sequence_lens (input 0) must be
  // absent or full (checked by control_problem / here).
  const size_t n_states = s.explicit_inputs - 1 - m;
  Tensors states(ins.begin() + 1, ins.begin() + 1 + int64_t(n_states));
  Tensors xs(ins.begin() + 1 + int64_t(n_states), ins.begin() + int64_t(s.explicit_inputs));
  EMBER_CHECK(!xs.empty(), "onnx", "Scan has no scan input");
  const int64_t batch = xs[0].size(0);
  if (ins[0].defined())
    for (int64_t l : to_ints(ins[0]))
      EMBER_CHECK(l == xs[0].size(1), "onnx", "Scan (opset 8) with sequence_lens shorter than the ",
                  "sequence (", l, " of ", xs[0].size(1), ") is not supported");
  std::vector<Tensors> per(s.bodies[0]->output_slots.size());  // states, then scan outputs
  for (int64_t b = 0; b < batch; ++b) {
    Tensors st, x;
    for (const Tensor& t : states) st.push_back(t.select(0, b));
    for (const Tensor& t : xs) x.push_back(t.select(0, b));
    const Tensors r = scan9(s, st, x, device, each, caps);
    for (size_t k = 0; k < r.size(); ++k) per[k].push_back(r[k]);
  }
  Tensors res;
  for (const Tensors& p : per) res.push_back(stack_along(p, 0, device));
  return res;
}

Tensors run_control(const Step& s, const Tensors& ins, Device device, bool each) {
  const std::string& op = s.proto->op_type();
  if (op == "If") return run_if(s, ins, device, each);
  if (op == "Loop") return run_loop(s, ins, device, each);
  return run_scan(s, ins, device, each);
}

// Ops whose outputs' shapes follow from their inputs' shapes and attributes alone.
const std::set<std::string>& shape_only_ops() {
  static const std::set<std::string> ops = {"Abs",
                                            "Acos",
                                            "Acosh",
                                            "Add",
                                            "And",
                                            "ArgMax",
                                            "ArgMin",
                                            "Asin",
                                            "Asinh",
                                            "Atan",
                                            "Atanh",
                                            "AveragePool",
                                            "BatchNormalization",
                                            "Cast",
                                            "CastLike",
                                            "Ceil",
                                            "Celu",
                                            "Clip",
                                            "Concat",
                                            "Conv",
                                            "ConvTranspose",
                                            "Cos",
                                            "Cosh",
                                            "Div",
                                            "Dropout",
                                            "Elu",
                                            "Equal",
                                            "Erf",
                                            "Exp",
                                            "Flatten",
                                            "Floor",
                                            "Gather",
                                            "Gelu",
                                            "Gemm",
                                            "GlobalAveragePool",
                                            "GlobalMaxPool",
                                            "Greater",
                                            "GreaterOrEqual",
                                            "HardSigmoid",
                                            "HardSwish",
                                            "Identity",
                                            "InstanceNormalization",
                                            "IsInf",
                                            "IsNaN",
                                            "LayerNormalization",
                                            "LeakyRelu",
                                            "Less",
                                            "LessOrEqual",
                                            "Log",
                                            "LogSoftmax",
                                            "MatMul",
                                            "Max",
                                            "MaxPool",
                                            "Mean",
                                            "Min",
                                            "Mish",
                                            "Mod",
                                            "Mul",
                                            "Neg",
                                            "Not",
                                            "Or",
                                            "Pow",
                                            "PRelu",
                                            "Reciprocal",
                                            "Relu",
                                            "Round",
                                            "Selu",
                                            "Sigmoid",
                                            "Sign",
                                            "Sin",
                                            "Sinh",
                                            "Softmax",
                                            "Softplus",
                                            "Softsign",
                                            "Sqrt",
                                            "Sub",
                                            "Sum",
                                            "Tan",
                                            "Tanh",
                                            "ThresholdedRelu",
                                            "Transpose",
                                            "Where",
                                            "Xor"};
  return ops;
}

// Ops whose outputs' shapes follow from input 0's shape, the attributes and the other inputs'
// values.
const std::set<std::string>& shape_by_values_ops() {
  static const std::set<std::string> ops = {
      "CumSum",    "Expand",          "OneHot",       "Pad",
      "ReduceL1",  "ReduceL2",        "ReduceLogSum", "ReduceLogSumExp",
      "ReduceMax", "ReduceMean",      "ReduceMin",    "ReduceProd",
      "ReduceSum", "ReduceSumSquare", "Reshape",      "Resize",
      "Slice",     "Split",           "Squeeze",      "Tile",
      "TopK",      "Trilu",           "Unsqueeze",    "Upsample"};
  return ops;
}

// Marks the shape steps: a value is fixed by the input shapes when it is a constant, the Shape
// or Size of a tensor whose shape is, or a deterministic op's result on such values alone; a
// tensor's shape is when its value is, or its op's output shape follows from fixed shapes (and
// values) as the two lists above say. Inputs and captures have fixed shapes (the key).
void mark_shape_steps(Program& p) {
  std::vector<char> value(p.constants.size()), shape(p.constants.size());
  for (size_t k = 0; k < p.constants.size(); ++k) value[k] = shape[k] = p.constants[k].defined();
  for (int k : p.input_slots) shape[size_t(k)] = 1;
  for (int k : p.capture_slots) shape[size_t(k)] = 1;
  auto is = [](const std::vector<char>& f, int k) { return k < 0 || f[size_t(k)]; };
  for (Step& s : p.steps) {
    const std::string& op = s.proto->op_type();
    bool all_values = s.op != nullptr && foldable(*s.proto), all_shapes = s.op != nullptr;
    for (int k : s.in) {
      all_values = all_values && is(value, k);
      all_shapes = all_shapes && is(shape, k);
    }
    const bool reads_shape = (op == "Shape" || op == "Size") && !s.in.empty() && is(shape, s.in[0]);
    s.shape_step = all_values || reads_shape;
    bool fixed_shape = s.shape_step || (all_shapes && shape_only_ops().count(op));
    if (!fixed_shape && s.op && shape_by_values_ops().count(op) && !s.in.empty() &&
        is(shape, s.in[0])) {
      fixed_shape = true;
      for (size_t i = 1; i < s.in.size(); ++i) fixed_shape = fixed_shape && is(value, s.in[i]);
    }
    for (int k : s.out) {
      if (k < 0) continue;
      value[size_t(k)] = s.shape_step;
      shape[size_t(k)] = fixed_shape;
      if (s.shape_step) p.shape_slots.push_back(k);
    }
  }
}

// The shapes and dtypes of a run's inputs and captures (what the shape steps' values depend on).
std::string shape_key(const Tensors& inputs, const Tensors& captures) {
  std::string key;
  for (const Tensors* ts : {&inputs, &captures})
    for (const Tensor& t : *ts) {
      if (!t.defined()) {
        key += "-;";
        continue;
      }
      key += dtype_name(t.dtype());
      for (int64_t d : t.shape()) key += "," + std::to_string(d);
      key += ";";
    }
  return key;
}

}  // namespace

bool is_control(const std::string& op_type) {
  return op_type == "If" || op_type == "Loop" || op_type == "Scan";
}

std::string control_problem(const ::onnx::NodeProto& n, int64_t opset) {
  const std::string& op = n.op_type();
  if (op == "If") {
    if (!graph_attr(n, "then_branch") || !graph_attr(n, "else_branch")) return "missing a branch";
  } else if (!graph_attr(n, "body")) {
    return "missing its body";
  }
  for (const auto& a : n.attribute()) {
    static const std::set<std::string> known = {
        "then_branch",     "else_branch",      "body",
        "num_scan_inputs", "scan_input_axes",  "scan_input_directions",
        "directions",      "scan_output_axes", "scan_output_directions"};
    if (!known.count(a.name())) return "attribute " + a.name() + " not mapped";
  }
  if (op == "Scan" && opset < 9)
    for (const auto& a : n.attribute())
      if (a.name() == "directions")
        for (int64_t d : a.ints())
          if (d != 0) return "reverse directions in opset 8";
  return "";
}

std::shared_ptr<Program> compile(const ::onnx::GraphProto& g,
                                 const std::vector<std::string>& inputs, const CompileContext& ctx,
                                 const std::function<bool(const std::string&)>& outer,
                                 const std::string& prefix) {
  auto prog = std::make_shared<Program>();
  std::unordered_map<std::string, int> slot;
  auto new_slot = [&](const std::string& name) {
    auto [it, fresh] = slot.try_emplace(name, int(prog->constants.size()));
    if (fresh) prog->constants.emplace_back();
    return it->second;
  };
  // A value of this graph, or of an enclosing one (a capture).
  auto read = [&](const std::string& name, const std::string& who) {
    auto it = slot.find(name);
    if (it != slot.end()) return it->second;
    EMBER_CHECK(outer && outer(name), "onnx", "'", ctx.path, "': ", who, " reads '", name,
                "', which no earlier node or input defines");
    const int k = new_slot(name);
    prog->captures.push_back(name);
    prog->capture_slots.push_back(k);
    return k;
  };
  for (const auto& t : g.initializer()) {
    try {
      prog->constants[size_t(new_slot(t.name()))] = tensor_from_proto(t, ctx.device, ctx.dir);
    } catch (const Error& e) {  // a dtype the device lacks, a bad external file
      EMBER_FAIL("onnx", "'", ctx.path, "': initializer '", t.name(), "': ", e.what());
    }
  }
  for (const auto& name : inputs) prog->input_slots.push_back(new_slot(name));

  auto& reg = op_registry();
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    const std::string label = prefix + (n.name().empty() ? "#" + std::to_string(i) : n.name());
    const std::string who = "node '" + label + "' (" + n.op_type() + ")";
    Node node{n, ctx.opset, {}, ctx.device, {}};
    for (const auto& in : n.input()) {
      auto it = ctx.types->find(in);
      node.input_types.push_back(it == ctx.types->end() ? 0 : it->second);
    }
    const bool control = is_control(n.op_type());
    Step s{&n, control ? nullptr : &reg.at(n.op_type()), node, label, {}, {}, {}, 0, false, {}, {}};
    for (const auto& name : n.input()) s.in.push_back(name.empty() ? -1 : read(name, who));
    s.explicit_inputs = s.in.size();
    if (control) {
      // A body sees this graph's values defined so far and those of the enclosing graphs.
      auto visible = [&](const std::string& name) {
        return slot.count(name) > 0 || (outer && outer(name));
      };
      for (const char* attr : {"then_branch", "else_branch", "body"}) {
        const ::onnx::GraphProto* body = graph_attr(n, attr);
        if (!body) continue;
        auto p = compile(*body, input_names(*body), ctx, visible, label + "/" + attr + "/");
        std::vector<size_t> idx;
        for (const std::string& c : p->captures) {
          const int k = read(c, who);
          size_t at = s.explicit_inputs;
          while (at < s.in.size() && s.in[at] != k) ++at;
          if (at == s.in.size()) s.in.push_back(k);
          idx.push_back(at);
        }
        s.bodies.push_back(std::move(p));
        s.body_captures.push_back(std::move(idx));
      }
    }
    bool constant = foldable(n);
    for (int k : s.in) constant = constant && (k < 0 || prog->constants[size_t(k)].defined());
    if (!constant && wants_constant_scalars(n.op_type()))
      for (int k : s.in) {
        const Tensor* c = k < 0 ? nullptr : &prog->constants[size_t(k)];
        auto& v = s.node.const_scalars.emplace_back();
        if (c && c->defined() && c->numel() == 1 && c->dtype() != DType::b8)
          v = Node::ConstScalar{c->to(Device::ref()).to(DType::f64).reshape({}).item<double>(),
                                c->dim(), c->dtype()};
      }
    for (const auto& name : n.output()) s.out.push_back(name.empty() ? -1 : new_slot(name));
    if (constant) {  // computed now, once
      Tensors ins;
      for (int k : s.in) ins.push_back(k < 0 ? Tensor() : prog->constants[size_t(k)]);
      Tensors outs;
      try {
        outs = run_step(s, ins, ctx.device, false);
      } catch (const std::exception& e) {
        EMBER_FAIL("onnx", "'", ctx.path, "': ", who, " failed on its constant inputs: ", e.what());
      }
      for (size_t k = 0; k < s.out.size() && k < outs.size(); ++k)
        if (s.out[k] >= 0) prog->constants[size_t(s.out[k])] = outs[k];
      ++prog->folded;
      continue;
    }
    prog->steps.push_back(std::move(s));
  }
  for (const auto& o : g.output())
    prog->output_slots.push_back(read(o.name(), "graph output '" + o.name() + "'"));
  mark_shape_steps(*prog);
  // Release each computed value after its last reader (outputs are kept).
  std::vector<int> last(prog->constants.size(), -1);
  for (size_t i = 0; i < prog->steps.size(); ++i)
    for (int k : prog->steps[i].in)
      if (k >= 0) last[size_t(k)] = int(i);
  for (int k : prog->output_slots) last[size_t(k)] = -2;
  for (size_t k = 0; k < last.size(); ++k)
    if (last[k] >= 0 && !prog->constants[k].defined())
      prog->steps[size_t(last[k])].release.push_back(int(k));
  return prog;
}

Tensors execute(const Program& p, const Tensors& inputs, const Tensors& captures, Device device,
                bool each) {
  std::vector<Tensor> vals = p.constants;
  EMBER_CHECK(inputs.size() == p.input_slots.size(), "onnx", "a subgraph takes ",
              p.input_slots.size(), " inputs, got ", inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) vals[size_t(p.input_slots[i])] = inputs[i];
  for (size_t i = 0; i < captures.size(); ++i) vals[size_t(p.capture_slots[i])] = captures[i];
  // The shape steps' values of an earlier run with these input shapes, else computed now.
  std::string key;
  bool known = false;
  std::vector<Tensor> shape_vals;
  if (!p.shape_slots.empty()) {
    key = shape_key(inputs, captures);
    std::lock_guard<std::mutex> lock(p.shapes->mu);
    auto it = p.shapes->by_key.find(key);
    if (it != p.shapes->by_key.end()) {
      known = true;
      for (size_t i = 0; i < p.shape_slots.size(); ++i)
        vals[size_t(p.shape_slots[i])] = it->second[i];
    }
  }
  for (const Step& s : p.steps) {
    if (known && s.shape_step) {
      for (int k : s.release) vals[size_t(k)] = Tensor();
      continue;
    }
    Tensors ins;
    for (int k : s.in) ins.push_back(k < 0 ? Tensor() : vals[size_t(k)]);
    Tensors outs;
    try {
      outs = run_step(s, ins, device, each);
      if (each) sync(device);
    } catch (const Error& e) {
      // A node inside a subgraph names itself already.
      if (!s.op && std::string(e.what()).find("node '") != std::string::npos) throw;
      EMBER_FAIL("onnx.run", "node '", s.label, "' (", s.proto->op_type(), ") failed: ", e.what());
    } catch (const std::exception& e) {
      EMBER_FAIL("onnx.run", "node '", s.label, "' (", s.proto->op_type(), ") failed: ", e.what());
    }
    for (size_t k = 0; k < s.out.size() && k < outs.size(); ++k)
      if (s.out[k] >= 0) {
        vals[size_t(s.out[k])] = outs[k];
        if (s.shape_step) shape_vals.push_back(outs[k]);
      }
    for (int k : s.release) vals[size_t(k)] = Tensor();
  }
  if (!known && shape_vals.size() == p.shape_slots.size() && !shape_vals.empty()) {
    sync(device);  // a failed index check on a GPU surfaces here, before the values are kept
    std::lock_guard<std::mutex> lock(p.shapes->mu);
    if (p.shapes->by_key.size() >= 16) p.shapes->by_key.clear();
    p.shapes->by_key.emplace(key, std::move(shape_vals));
  }
  // A constant, a kept shape value or (a view of) an input leaves as a copy, as ONNX Runtime
  // gives: the caller may write to its outputs.
  auto shares = [](const Tensor& v, const Tensors& ts) {
    for (const Tensor& t : ts)
      if (t.defined() && t.impl()->storage == v.impl()->storage) return true;
    return false;
  };
  Tensors out;
  for (int k : p.output_slots) {
    const Tensor& v = vals[size_t(k)];
    const bool kept = v.defined() && (p.constants[size_t(k)].defined() ||
                                      std::find(p.shape_slots.begin(), p.shape_slots.end(), k) !=
                                          p.shape_slots.end() ||
                                      shares(v, inputs) || shares(v, captures));
    out.push_back(kept ? v.clone() : v);
  }
  return out;
}

}  // namespace ember::onnx::detail
