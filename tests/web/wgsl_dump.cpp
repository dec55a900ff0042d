// ember_wgsl_dump OUT_DIR: lowers a broad set of ops through codegen::lower(op, Dialect::wgsl)
// for a WebGPU-like device (f16 and packed 8/16-bit storage, no 64-bit types, SwiftShader's
// limits) and writes each distinct kernel's source to OUT_DIR/<name>_<key>.wgsl, for
// validate_wgsl.mjs to compile in Chromium. An op the WebGPU caps refuse for lacking 64-bit
// types (i64 indices, f64) is counted, not written; an op no device takes (it fails with every
// feature) is not the dialect's concern. Any other lowering error fails (status 1).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "codegen/kernel.h"
#include "codegen/lower.h"
#include "ember/ember.h"
#include "ir/op_traits.h"

namespace ember {
namespace {

using codegen::Caps;
using codegen::Dialect;
using codegen::Lowering;

Caps webgpu_caps() {
  Caps c;
  c.f16 = c.i8 = c.i16 = true;
  c.i64 = c.f64 = false;
  c.max_workgroup_size = 256;
  c.max_shared_bytes = 16384;
  c.max_buffers = 8;
  c.cpu = true;  // SwiftShader
  return c;
}

Caps all_caps() {
  Caps c = webgpu_caps();
  c.i64 = c.f64 = true;
  return c;
}

Tensor t(const Shape& s, DType dt = DType::f32) { return empty(s, {dt, Device::ref()}); }

const std::vector<DType> kDTypes = {DType::f32, DType::i32, DType::f16, DType::b8,   DType::u8,
                                    DType::i8,  DType::i16, DType::u16, DType::bf16, DType::u32};

// A lowering to try: its label and the call.
struct Case {
  std::string label;
  std::function<Lowering(Dialect, const Caps&)> lower;
};

void add(std::vector<Case>& cs, const std::string& label, ir::Op op) {
  cs.push_back({label + " " + ir::name(op),
                [op](Dialect d, const Caps& c) { return codegen::lower(op, d, c); }});
}

void elementwise(DType dt, std::vector<Case>& cs) {
  const std::string l = dtype_name(dt);
  const std::vector<Tensor> srcs = {t({7}, dt), t({4, 3}, dt).t(), t({5}, dt).expand({3, 5}),
                                    t({6, 8}, dt).slice(1, 1, 7, 2)};
  for (const Tensor& src : srcs)
    for (DType to : kDTypes) add(cs, l + "->" + dtype_name(to), ir::Copy{src, t(src.shape(), to)});
  add(cs, l, ir::Fill{t({3, 4}, dt), Scalar(1.5)});
  for (size_t op = 0; op < ir::kUnaryOpCount; ++op) {
    const auto u = ir::UnaryOp(op);
    const bool pred = ir::traits(u).predicate;
    add(cs, l,
        ir::Unary{u, t({3, 4}, dt).t(), pred ? t({4, 3}, DType::b8) : t({4, 3}, dt), 0.5, 2.0,
                  1.0});
  }
  for (size_t op = 0; op < ir::kBinaryOpCount; ++op) {
    const auto b = ir::BinaryOp(op);
    const Tensor out = ir::traits(b).predicate ? t({3, 4}, DType::b8) : t({3, 4}, dt);
    add(cs, l, ir::Binary{b, t({3, 4}, dt), t({4}, dt).expand({3, 4}), out});
  }
  add(cs, l,
      ir::Where{t({3, 4}, DType::b8), t({3, 4}, dt), t({4}, dt).expand({3, 4}), t({3, 4}, dt)});
  for (int dist = 0; dist < 4; ++dist)
    add(cs, l, ir::Random{ir::RandomDist(dist), t({3, 4}, dt), 0, 5, 42, 7, Tensor()});
  add(cs, l, ir::Random{ir::RandomDist::bernoulli, t({3, 4}), 0, 1, 1, 0, t({3, 4}, dt)});
}

void reductions(DType dt, std::vector<Case>& cs) {
  using ir::ReduceOp;
  using ir::ScanOp;
  const std::string l = dtype_name(dt);
  const Tensor xp = t({3, 4, 5}, dt).permute({2, 0, 1});
  const DType acc = is_floating(dt) ? dt : DType::i64;
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::any, ReduceOp::all, ReduceOp::max,
                      ReduceOp::min}) {
    const bool logical = op == ReduceOp::any || op == ReduceOp::all;
    const DType out = logical ? DType::b8 : (op == ReduceOp::max || op == ReduceOp::min) ? dt : acc;
    add(cs, l, ir::Reduce{op, xp, {0, 2}, t({1, 3, 1}, out), {}});
    add(cs, l, ir::Reduce{op, t({2, 3, 4, 5}, dt), {0, 1, 2, 3}, t({1, 1, 1, 1}, out), {}});
    // every variant (shared-memory groups, splits) for a few extents
    for (auto [outs, red] :
         std::vector<std::pair<int64_t, int64_t>>{{2, 3000}, {1, 70000}, {500, 20}}) {
      const ir::Reduce r{op, t({outs, red}, dt), {1}, t({outs, 1}, out), {}};
      for (const auto& v : codegen::reduce_variants(outs, red, webgpu_caps()))
        cs.push_back({l + " reduce " + v.name, [r, v](Dialect d, const Caps& c) {
                        return codegen::lower_reduce(r, d, c, &v);
                      }});
    }
    if (op == ReduceOp::max || op == ReduceOp::min)
      add(cs, l, ir::Reduce{op, xp, {1}, t({5, 1, 4}, dt), t({5, 1, 4}, DType::i64)});
  }
  for (ScanOp op : {ScanOp::cumsum, ScanOp::cumprod, ScanOp::cummax, ScanOp::cummin}) {
    const bool extreme = op == ScanOp::cummax || op == ScanOp::cummin;
    add(cs, l,
        ir::Scan{op, xp, 1, t({5, 3, 4}, extreme ? dt : acc),
                 extreme ? t({5, 3, 4}, DType::i64) : Tensor()});
    add(cs, l, ir::Scan{op, t({2, 5000}, dt), 1, t({2, 5000}, extreme ? dt : acc), Tensor()});
  }
  add(cs, l, ir::Scan{ScanOp::cumsum, t({3, 70000}, dt), 1, t({3, 70000}, acc), Tensor()});
  add(cs, l, ir::Sort{t({2, 5000}, dt), 1, false, t({2, 5000}, dt), t({2, 5000}, DType::i64)});
  add(cs, l, ir::Nonzero{xp, t({7, 3}, DType::i64)});
}

void spatial(DType dt, std::vector<Case>& cs) {
  const std::string l = dtype_name(dt);
  add(cs, l, ir::Gather{t({4, 5}, dt), 0, t({3, 5}, DType::i64), t({3, 5}, dt)});
  add(cs, l, ir::IndexSelect{t({3, 5}, dt).t(), 0, t({7}, DType::i32), t({7, 3}, dt)});
  add(cs, l,
      ir::Scatter{t({4, 5}, dt), 0, t({6, 5}, DType::i64), t({6, 5}, dt), ir::ScatterReduce::sum});
  add(cs, l, ir::IndexAdd{t({4, 3}, dt), 0, t({6}, DType::i32), t({6, 3}, dt), Scalar(2)});
  if (dt != DType::b8) {
    for (const ir::Matmul& m :
         {ir::Matmul{t({2, 3, 4}, dt), t({2, 4, 5}, dt), t({2, 3, 5}, dt)},
          ir::Matmul{t({1, 64, 40}, dt), t({1, 40, 48}, dt), t({1, 64, 48}, dt)},
          ir::Matmul{t({1, 40, 64}, dt).transpose(1, 2), t({1, 48, 40}, dt).transpose(1, 2),
                     t({1, 64, 48}, dt)},
          ir::Matmul{t({1, 256, 256}, dt), t({1, 256, 256}, dt), t({1, 256, 256}, dt)}}) {
      add(cs, l, m);
      for (const auto& v : codegen::matmul_variants(m, webgpu_caps()))
        cs.push_back({l + " matmul " + v.name, [m, v](Dialect d, const Caps& c) {
                        return codegen::lower_matmul(m, d, c, v);
                      }});
    }
  }
  for (int nd = 1; nd <= 3; ++nd) {
    Shape img{2, 3}, out{2, 3};
    std::vector<int64_t> k, s, p, dil;
    for (int q = 0; q < nd; ++q) {
      img.push_back(5);
      out.push_back(3);
      k.push_back(2);
      s.push_back(2);
      p.push_back(1);
      dil.push_back(1);
    }
    const int64_t cols = nd == 1 ? 3 : nd == 2 ? 9 : 27, kp = nd == 1 ? 2 : nd == 2 ? 4 : 8;
    add(cs, l, ir::Im2col{t(img, dt), t({2, 3 * kp, cols}, dt), k, s, p, dil, Scalar(1.5)});
    add(cs, l, ir::Col2im{t({2, 3 * kp, cols}, dt), t(img, dt), k, s, p, dil});
    add(cs, l, ir::AdaptivePool{true, t(img, dt), t(out, dt), Tensor()});
    add(cs, l, ir::AdaptivePool{false, t(img, dt), t(out, dt), Tensor()});
    for (auto m : {ir::InterpMode::nearest, ir::InterpMode::nearest_exact, ir::InterpMode::linear,
                   ir::InterpMode::cubic})
      for (bool align : {false, true})
        if (!(m == ir::InterpMode::cubic && nd == 3))
          add(cs, l, ir::Interpolate{m, align, {}, t(img, dt), t(out, dt)});
  }
}

// exp(x) * y + 1, stored, and (sum variant) that value summed over dim 1.
ir::FusedGraph chain(DType dt, bool reduce) {
  using K = ir::FusedGraph::Kind;
  ir::FusedGraph g;
  g.shape = {4, 33};
  g.inputs = {t({4, 33}, dt), t({33}, dt).expand({4, 33})};
  auto node = [&](K kind, int a = -1, int b = -1) {
    ir::FusedGraph::Node n;
    n.kind = kind;
    n.dtype = dt;
    n.a = a;
    n.b = b;
    g.nodes.push_back(n);
    return int(g.nodes.size()) - 1;
  };
  const int x = node(K::load), y = node(K::load);
  g.nodes[size_t(x)].input = 0;
  g.nodes[size_t(y)].input = 1;
  const int e = node(K::unary, x);
  g.nodes[size_t(e)].unary = ir::UnaryOp::exp;
  const int m = node(K::binary, e, y);
  g.nodes[size_t(m)].binary = ir::BinaryOp::mul;
  const int one = node(K::constant);
  g.nodes[size_t(one)].value = Scalar(1.0);
  const int s = node(K::binary, m, one);
  const int c = node(K::binary, s, x);
  g.nodes[size_t(c)].binary = ir::BinaryOp::gt;
  g.nodes[size_t(c)].dtype = DType::b8;
  const int w = node(K::where, c, s);
  g.nodes[size_t(w)].c = x;
  g.outputs.push_back({w, t({4, 33}, dt)});
  if (reduce) g.reductions.push_back({ir::ReduceOp::sum, w, {1}, t({4, 1}, dt)});
  g.ops = 6;
  return g;
}

// relu(matmul + bias) as a matmul epilogue.
void graphs(DType dt, std::vector<Case>& cs) {
  const std::string l = dtype_name(dt);
  for (bool reduce : {false, true}) {
    const ir::FusedGraph g = chain(dt, reduce);
    cs.push_back({l + " fused graph" + (reduce ? " + sum" : ""),
                  [g](Dialect d, const Caps& c) { return codegen::lower_graph(g, d, c); }});
  }
  using K = ir::FusedGraph::Kind;
  const ir::Matmul m{t({1, 64, 40}, dt), t({1, 40, 48}, dt), t({1, 64, 48}, dt)};
  ir::FusedGraph g;
  g.shape = {1, 64, 48};
  g.inputs = {m.dst, t({48}, dt).expand({1, 64, 48})};
  ir::FusedGraph::Node n;
  n.dtype = dt;
  n.input = 0;
  g.nodes.push_back(n);
  n.input = 1;
  g.nodes.push_back(n);
  n = {};
  n.dtype = dt;
  n.kind = K::binary;
  n.a = 0;
  n.b = 1;
  g.nodes.push_back(n);
  n.kind = K::unary;
  n.unary = ir::UnaryOp::relu;
  n.a = 2;
  g.nodes.push_back(n);
  g.outputs.push_back({3, t({1, 64, 48}, dt)});
  g.ops = 2;
  if (!codegen::matmul_epilogue_applies(m, g, 0, webgpu_caps())) return;
  for (const auto& v : codegen::matmul_variants(m, webgpu_caps()))
    cs.push_back({l + " matmul epilogue " + v.name, [m, g, v](Dialect d, const Caps& c) {
                    return codegen::lower_matmul_epilogue(m, g, 0, d, c, v);
                  }});
}

int run(const std::string& dir) {
  std::vector<Case> cs;
  for (DType dt : kDTypes) {
    elementwise(dt, cs);
    reductions(dt, cs);
    spatial(dt, cs);
    if (is_floating(dt)) graphs(dt, cs);
  }
  std::map<std::string, std::string> kernels;  // file name -> source
  size_t lowered = 0, lacks64 = 0, nowhere = 0, failed = 0;
  const Caps caps = webgpu_caps();
  for (const Case& c : cs) {
    try {
      const Lowering low = c.lower(Dialect::wgsl, caps);
      ++lowered;
      for (const auto& la : low.launches)
        kernels[la.kernel->name + "_" + la.kernel->key + ".wgsl"] = la.kernel->source;
    } catch (const Error& e) {
      const std::string what = e.what();
      try {
        c.lower(Dialect::glsl, all_caps());
      } catch (const Error&) {
        ++nowhere;  // no device takes it: not the dialect's concern
        continue;
      }
      if (what.find("64-bit") != std::string::npos || what.find("float64") != std::string::npos ||
          what.find("Int64") != std::string::npos || what.find("Float64") != std::string::npos) {
        ++lacks64;
      } else {
        ++failed;
        std::fprintf(stderr, "FAILED %s: %s\n", c.label.c_str(), what.c_str());
      }
    }
  }
  std::filesystem::create_directories(dir);
  for (const auto& [file, src] : kernels) std::ofstream(dir + "/" + file) << src;
  std::printf(
      "wgsl_dump: %zu lowerings tried: %zu lowered into %zu distinct kernels, %zu refused for "
      "lacking 64-bit types, %zu taken by no device, %zu failed\n",
      cs.size(), lowered, kernels.size(), lacks64, nowhere, failed);
  return failed || kernels.empty() ? 1 : 0;
}

}  // namespace
}  // namespace ember

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: ember_wgsl_dump OUT_DIR\n");
    return 2;
  }
  try {
    return ember::run(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ember_wgsl_dump: %s\n", e.what());
    return 1;
  }
}
