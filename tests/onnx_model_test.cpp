// ember::onnx::load / run / inspect (include/ember/onnx.h) on small models built here with ONNX's
// protobuf classes: values, input checks, load-time errors naming the node, external data,
// constant folding, and truncated / bit-flipped / unknown files (never a crash, always an
// ember::Error).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "ember/ember.h"
#include "ember/onnx.h"
#include "test_util.h"

namespace ember {
namespace {

namespace F = nn::functional;

::onnx::TensorProto float_tensor(const std::string& name, const std::vector<int64_t>& dims,
                                 const std::vector<float>& v) {
  ::onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(::onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
  return t;
}

void add_value(::onnx::ValueInfoProto* v, const std::string& name,
               const std::vector<std::string>& dims, int32_t type = ::onnx::TensorProto::FLOAT) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(type);
  tt->mutable_shape();  // a scalar (no dims) has a shape too
  for (const std::string& d : dims) {
    auto* dim = tt->mutable_shape()->add_dim();
    if (!d.empty() && std::isdigit(static_cast<unsigned char>(d[0])))
      dim->set_dim_value(std::stoll(d));
    else
      dim->set_dim_param(d);
  }
}

::onnx::NodeProto* add_node(::onnx::GraphProto* g, const std::string& op,
                            const std::vector<std::string>& in, const std::vector<std::string>& out,
                            const std::string& name = "") {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& s : in) n->add_input(s);
  for (const auto& s : out) n->add_output(s);
  return n;
}

const std::vector<float> kW = {0.5f, -1, 2, 0.25f, -0.75f, 1.5f};  // [3, 2]
const std::vector<float> kB = {0.1f, -0.2f};

// An empty model of the default domain's `opset` with a graph called `name`.
::onnx::ModelProto empty_model(const std::string& name, int64_t opset = 13) {
  ::onnx::ModelProto m;
  m.set_ir_version(7);
  m.add_opset_import()->set_version(opset);
  m.mutable_graph()->set_name(name);
  return m;
}

// Y = relu(X @ W + B) reshaped to [-1] by a shape that a Constant gives: X [batch, 3] -> Y.
::onnx::ModelProto small_model(int64_t opset = 13) {
  ::onnx::ModelProto m;
  m.set_ir_version(7);
  m.set_producer_name("ember test");
  m.add_opset_import()->set_version(opset);
  auto* g = m.mutable_graph();
  g->set_name("small");
  add_value(g->add_input(), "X", {"batch", "3"});
  add_value(g->add_output(), "Y", {"n"});
  *g->add_initializer() = float_tensor("W", {3, 2}, kW);
  *g->add_initializer() = float_tensor("B", {2}, kB);
  add_node(g, "MatMul", {"X", "W"}, {"xw"}, "matmul");
  add_node(g, "Add", {"xw", "B"}, {"xwb"}, "add");
  add_node(g, "Relu", {"xwb"}, {"r"}, "relu");
  auto* c = add_node(g, "Constant", {}, {"shape"}, "shape");
  auto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(::onnx::AttributeProto::TENSOR);
  ::onnx::TensorProto* t = a->mutable_t();
  t->set_data_type(::onnx::TensorProto::INT64);
  t->add_dims(1);
  t->add_int64_data(-1);
  add_node(g, "Reshape", {"r", "shape"}, {"Y"}, "flatten");
  return m;
}

std::string write_model(const test::TempDir& dir, const ::onnx::ModelProto& m,
                        const std::string& name = "model.onnx") {
  const std::string path = dir / name;
  std::ofstream f(path, std::ios::binary);
  m.SerializeToOstream(&f);
  return path;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void expect_error(const std::function<void()>& f, const std::vector<std::string>& needles) {
  const std::string what = error_of(f);
  ASSERT_FALSE(what.empty()) << "no ember::Error";
  for (const std::string& n : needles) EXPECT_NE(what.find(n), std::string::npos) << what;
}

Tensor expected_y(const Tensor& x) {
  const Tensor w = from_vector(kW, {3, 2}, Device::ref()), b = from_vector(kB, {2}, Device::ref());
  return F::relu(matmul(x.to(Device::ref()), w) + b).reshape({-1});
}

TEST(OnnxModelTest, RunsOnEveryDeviceAndDescribesItsGraph) {
  test::TempDir dir("onnx");
  const std::string path = write_model(dir, small_model());
  const Tensor x =
      from_vector<float>({1, 2, 3, -1, 0.5f, 4, 0, 0, 1, 2, -2, 1}, {4, 3}, Device::ref());
  for (const DeviceInfo& d : available_devices()) {
    SCOPED_TRACE(d.device.str());
    const onnx::Model m = onnx::load(path, d.device);
    EXPECT_EQ(m.device(), d.device);
    EXPECT_EQ(m.opset(), 13);
    ASSERT_EQ(m.inputs().size(), 1u);
    EXPECT_EQ(m.inputs()[0].name, "X");
    EXPECT_EQ(m.inputs()[0].shape, (std::vector<int64_t>{-1, 3}));
    EXPECT_EQ(m.inputs()[0].dim_params[0], "batch");
    ASSERT_EQ(m.outputs().size(), 1u);
    EXPECT_EQ(m.outputs()[0].name, "Y");
    EXPECT_EQ(m.folded_nodes(), 1);  // the Constant
    EXPECT_EQ(m.nodes(), 4);
    const auto out = m.run({{"X", x}});
    ASSERT_EQ(out.count("Y"), 1u);
    EXPECT_EQ(out.at("Y").device(), d.device);
    const std::vector<float> got = out.at("Y").to(Device::ref()).to_vector<float>();
    const std::vector<float> want = expected_y(x).to_vector<float>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
    // Another batch size through the same model (the "batch" dim is open).
    const auto out2 = m.run({{"X", x.slice(0, 0, 1)}});
    EXPECT_EQ(out2.at("Y").shape(), (Shape{2}));
  }
  const onnx::Info info = onnx::inspect(path);
  EXPECT_EQ(info.opset, 13);
  EXPECT_EQ(info.producer, "ember test");
  EXPECT_EQ(info.initializers, 2);
  EXPECT_EQ(info.parameters, 8);
  EXPECT_EQ(info.op_counts.at("MatMul"), 1);
  EXPECT_TRUE(info.unsupported.empty());
}

TEST(OnnxModelTest, RunNamesTheInputThatDoesNotFit) {
  test::TempDir dir("onnx");
  const onnx::Model m = onnx::load(write_model(dir, small_model()), Device::cpu());
  const Tensor x = zeros({2, 3});
  expect_error([&] { m.run({}); }, {"input 'X' is missing", "inputs: X"});
  expect_error([&] { m.run({{"X", x}, {"Z", x}}); }, {"no input 'Z'"});
  expect_error([&] { m.run({{"X", x.to(DType::f64)}}); }, {"'X' is float64", "takes float32"});
  expect_error([&] { m.run({{"X", zeros({2, 4})}}); }, {"[2, 4]", "takes [batch, 3]"});
  expect_error([&] { m.run({{"X", zeros({3})}}); }, {"[3]", "[batch, 3]"});
  expect_error([] { onnx::Model().inputs(); }, {"holds no model"});
}

TEST(OnnxModelTest, LoadNamesEveryNodeItCannotRun) {
  test::TempDir dir("onnx");
  ::onnx::ModelProto m = small_model(15);  // Bernoulli: opset 15
  auto* g = m.mutable_graph();
  add_node(g, "Bernoulli", {"Y"}, {"draws"}, "coin");
  auto* relu = g->mutable_node(2);
  auto* bad = relu->add_attribute();  // Relu takes no attribute: the checker says so
  bad->set_name("alpha");
  bad->set_type(::onnx::AttributeProto::FLOAT);
  bad->set_f(1);
  expect_error([&] { onnx::load(write_model(dir, m), Device::cpu()); },
               {"not a valid ONNX model", "alpha"});
  relu->clear_attribute();
  const std::string path = write_model(dir, m);
  expect_error([&] { onnx::load(path, Device::cpu()); },
               {"node 'coin' (Bernoulli): op not mapped"});
  const onnx::Info info = onnx::inspect(path);
  ASSERT_EQ(info.unsupported.size(), 1u);
  EXPECT_EQ(info.unsupported[0].node, "coin");
  EXPECT_EQ(info.unsupported[0].op_type, "Bernoulli");

  ::onnx::ModelProto elu = small_model();
  auto* n = elu.mutable_graph()->mutable_node(2);  // Relu -> Elu with its alpha
  n->set_op_type("Elu");
  auto* at = n->add_attribute();
  at->set_name("alpha");
  at->set_type(::onnx::AttributeProto::FLOAT);
  at->set_f(0.5f);
  EXPECT_NO_THROW(onnx::load(write_model(dir, elu), Device::cpu()));

  ::onnx::ModelProto strings = small_model();
  add_value(strings.mutable_graph()->add_output(), "S", {"1"}, ::onnx::TensorProto::STRING);
  expect_error([&] { onnx::load(write_model(dir, strings), Device::cpu()); },
               {"graph output S", "STRING"});

  for (int64_t opset : {0, 18}) {
    ::onnx::ModelProto o = small_model();
    o.mutable_opset_import(0)->set_version(opset);
    expect_error([&] { onnx::load(write_model(dir, o), Device::cpu()); },
                 {opset ? "opset 18" : "no opset of the default domain"});
  }
}

// A Gather index out of range: on a GPU the lazy stream reports it after later nodes were
// recorded; the error still names the Gather node.
TEST(OnnxModelTest, RunNamesTheFailingNodeOnEveryDevice) {
  test::TempDir dir("onnx");
  ::onnx::ModelProto m = empty_model("gather");
  auto* g = m.mutable_graph();
  add_value(g->add_input(), "idx", {"2"}, ::onnx::TensorProto::INT64);
  add_value(g->add_output(), "y", {"2", "3"});
  *g->add_initializer() = float_tensor("table", {4, 3}, std::vector<float>(12, 1.f));
  add_node(g, "Gather", {"table", "idx"}, {"rows"}, "my_gather");
  add_node(g, "Relu", {"rows"}, {"r"}, "after");
  add_node(g, "Neg", {"r"}, {"y"}, "last");
  const std::string path = write_model(dir, m);
  for (const DeviceInfo& d : available_devices()) {
    SCOPED_TRACE(d.device.str());
    const onnx::Model model = onnx::load(path, d.device);
    const Tensor ok = from_vector<int64_t>({0, 3}, {2});
    EXPECT_EQ(model.run({{"idx", ok}}).at("y").shape(), (Shape{2, 3}));
    expect_error(
        [&] {
          model.run({{"idx", from_vector<int64_t>({1, 7}, {2})}});
        },
        {"node 'my_gather' (Gather)", "7"});
    // ONNX counts negative indices from the end, down to -size; the message names the model's
    // value and that range.
    EXPECT_EQ(model.run({{"idx", from_vector<int64_t>({-4, 3}, {2})}}).at("y").shape(),
              (Shape{2, 3}));
    expect_error(
        [&] {
          model.run({{"idx", from_vector<int64_t>({-5, 0}, {2})}});
        },
        {"node 'my_gather' (Gather)", "index -5", "[-4, 4)"});
    EXPECT_EQ(model.run({{"idx", ok}}).at("y").shape(), (Shape{2, 3}));  // still runs
  }
}

::onnx::TensorProto int64_tensor(const std::string& name, const std::vector<int64_t>& dims,
                                 const std::vector<int64_t>& v) {
  ::onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(::onnx::TensorProto::INT64);
  for (int64_t d : dims) t.add_dims(d);
  for (int64_t x : v) t.add_int64_data(x);
  return t;
}

// One-element constant operands run as scalars (ops.cpp: Node::scalar_input): the values and
// shapes stay the broadcasting ones, a constant of more dims than the tensor included.
TEST(OnnxModelTest, OneElementConstantOperandsKeepBroadcastingAndValues) {
  test::TempDir dir("onnx");
  ::onnx::ModelProto m = empty_model("scalars");
  auto* g = m.mutable_graph();
  add_value(g->add_input(), "X", {"n"});
  *g->add_initializer() = float_tensor("two", {}, {2});
  *g->add_initializer() = float_tensor("three", {1, 1}, {3});
  *g->add_initializer() = int64_tensor("e", {}, {2});
  *g->add_initializer() = float_tensor("lo", {}, {-0.5f});
  *g->add_initializer() = float_tensor("hi", {1}, {0.75f});
  add_node(g, "Add", {"X", "two"}, {"a"});
  add_node(g, "Mul", {"three", "a"}, {"b"});  // [1, n]: the constant has more dims
  add_node(g, "Pow", {"X", "e"}, {"p"});      // an int64 exponent
  add_node(g, "Div", {"X", "two"}, {"q"});
  add_node(g, "Sub", {"two", "X"}, {"s"});
  add_node(g, "Clip", {"X", "lo", "hi"}, {"c"});
  for (const char* o : {"b", "p", "q", "s", "c"}) add_value(g->add_output(), o, {});
  const std::string path = write_model(dir, m);
  const std::vector<float> xv = {-1.5f, -0.25f, 0, 0.5f, 3, std::nanf(""), 1e30f};
  const Tensor x = from_vector(xv, {int64_t(xv.size())}, Device::ref());
  const std::map<std::string, Tensor> want = {{"b", (x + 2.0f).unsqueeze(0) * 3.0f},
                                              {"p", x * x},
                                              {"q", x / 2.0f},
                                              {"s", 2.0f - x},
                                              {"c", clamp(x, Scalar(-0.5), Scalar(0.75))}};
  for (const DeviceInfo& d : available_devices()) {
    SCOPED_TRACE(d.device.str());
    const auto out = onnx::load(path, d.device).run({{"X", x.to(d.device)}});
    for (const auto& [name, w] : want) {
      SCOPED_TRACE(name);
      const Tensor got = out.at(name).to(Device::ref());
      EXPECT_EQ(got.shape(), w.shape());
      const std::vector<float> gv = got.to_vector<float>(), wv = w.to_vector<float>();
      ASSERT_EQ(gv.size(), wv.size());
      for (size_t i = 0; i < gv.size(); ++i)
        EXPECT_TRUE(gv[i] == wv[i] || (std::isnan(gv[i]) && std::isnan(wv[i])))
            << i << ": " << gv[i] << " vs " << wv[i];
    }
  }
}

// Values computed from shapes alone (Shape, Gather, Concat, ConstantOfShape) are kept per input
// shapes (program.cpp): each batch size gets its own, an output of them is the caller's copy,
// and the shape of a tensor whose size depends on data (NonZero) is never kept.
TEST(OnnxModelTest, ShapeValuesFollowTheInputShapesAndNeverTheData) {
  test::TempDir dir("onnx");
  ::onnx::ModelProto m = empty_model("shapes");
  auto* g = m.mutable_graph();
  add_value(g->add_input(), "X", {"batch", "3"});
  *g->add_initializer() = int64_tensor("zero", {}, {0});
  *g->add_initializer() = int64_tensor("axes", {1}, {0});
  *g->add_initializer() = int64_tensor("two", {1}, {2});
  add_node(g, "Shape", {"X"}, {"shape"});
  add_node(g, "Gather", {"shape", "zero"}, {"batch"});
  add_node(g, "Unsqueeze", {"batch", "axes"}, {"batch1"});
  add_node(g, "Concat", {"batch1", "two"}, {"dims"})->add_attribute()->CopyFrom([] {
    ::onnx::AttributeProto a;
    a.set_name("axis");
    a.set_type(::onnx::AttributeProto::INT);
    a.set_i(0);
    return a;
  }());
  add_node(g, "ConstantOfShape", {"dims"}, {"zeros"});
  add_node(g, "NonZero", {"X"}, {"nz"});
  add_node(g, "Identity", {"X"}, {"same"});
  add_node(g, "Shape", {"nz"}, {"nz_shape"});
  for (const char* o : {"dims", "zeros", "nz_shape", "same"}) add_value(g->add_output(), o, {});
  const std::string path = write_model(dir, m);
  for (const DeviceInfo& d : available_devices()) {
    SCOPED_TRACE(d.device.str());
    const onnx::Model model = onnx::load(path, d.device);
    for (int64_t batch : {2, 5, 2}) {
      for (float fill : {0.0f, 1.0f}) {  // the same shape, other data: no nonzero, then all
        std::vector<float> xv(size_t(batch * 3), fill);
        xv[0] = 1;
        const auto out = model.run({{"X", from_vector(xv, {batch, 3}, d.device)}});
        EXPECT_EQ(out.at("dims").to(Device::ref()).to_vector<int64_t>(),
                  (std::vector<int64_t>{batch, 2}));
        Tensor(out.at("dims")).add_(100);  // the caller's copy: the kept value stays as it was
        const Tensor x = from_vector(xv, {batch, 3}, d.device);
        Tensor(model.run({{"X", x}}).at("same")).fill_(-7);  // a copy of X, not X
        EXPECT_EQ(x.to(Device::ref()).to_vector<float>(), xv);
        EXPECT_EQ(out.at("zeros").shape(), (Shape{batch, 2}));
        const int64_t nonzero = fill == 0 ? 1 : batch * 3;
        EXPECT_EQ(out.at("nz_shape").to(Device::ref()).to_vector<int64_t>(),
                  (std::vector<int64_t>{2, nonzero}));
      }
    }
  }
}

// MaxPool's indices with padding torch's pools do not take (asymmetric, or more than half the
// kernel): flat indices into the input's own plane, as a direct scan of each window finds them.
TEST(OnnxModelTest, MaxPoolIndicesWithAsymmetricPaddingCountTheInput) {
  test::TempDir dir("onnx");
  const int64_t H = 6, W = 7;
  struct Case {
    std::vector<int64_t> k, s, pads;  // pads: h_begin, w_begin, h_end, w_end
  };
  for (const Case& c : {Case{{3, 3}, {1, 1}, {0, 0, 1, 1}}, Case{{3, 2}, {2, 1}, {2, 1, 0, 1}},
                        Case{{3, 3}, {1, 1}, {2, 2, 2, 2}}}) {
    ::onnx::ModelProto m = empty_model("pool", 12);
    auto* g = m.mutable_graph();
    add_value(g->add_input(), "x", {"1", "2", std::to_string(H), std::to_string(W)});
    add_value(g->add_output(), "y", {});
    add_value(g->add_output(), "i", {}, ::onnx::TensorProto::INT64);
    auto* n = add_node(g, "MaxPool", {"x"}, {"y", "i"}, "pool");
    for (const auto& [name, v] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
             {"kernel_shape", c.k}, {"strides", c.s}, {"pads", c.pads}}) {
      auto* a = n->add_attribute();
      a->set_name(name);
      a->set_type(::onnx::AttributeProto::INTS);
      for (int64_t x : v) a->add_ints(x);
    }
    const std::string path = write_model(dir, m);
    std::vector<float> xv(size_t(2 * H * W));
    for (size_t j = 0; j < xv.size(); ++j) xv[j] = float((j * 37) % 89) - 40;  // distinct
    const int64_t oh = (H + c.pads[0] + c.pads[2] - c.k[0]) / c.s[0] + 1;
    const int64_t ow = (W + c.pads[1] + c.pads[3] - c.k[1]) / c.s[1] + 1;
    std::vector<float> wy;
    std::vector<int64_t> wi;
    for (int64_t ch = 0; ch < 2; ++ch)
      for (int64_t a = 0; a < oh; ++a)
        for (int64_t b = 0; b < ow; ++b) {
          float best = -INFINITY;
          int64_t at = -1;
          for (int64_t u = 0; u < c.k[0]; ++u)
            for (int64_t v = 0; v < c.k[1]; ++v) {
              const int64_t h = a * c.s[0] - c.pads[0] + u, w = b * c.s[1] - c.pads[1] + v;
              if (h < 0 || h >= H || w < 0 || w >= W) continue;
              const float val = xv[size_t((ch * H + h) * W + w)];
              if (at < 0 || val > best) best = val, at = (ch * H + h) * W + w;
            }
          wy.push_back(best);
          wi.push_back(at);
        }
    for (const DeviceInfo& d : available_devices()) {
      SCOPED_TRACE(d.device.str());
      const auto out = onnx::load(path, d.device).run({{"x", from_vector(xv, {1, 2, H, W})}});
      EXPECT_EQ(out.at("y").to(Device::ref()).to_vector<float>(), wy);
      EXPECT_EQ(out.at("i").to(Device::ref()).to_vector<int64_t>(), wi);
    }
  }
}

TEST(OnnxModelTest, CastsToAndFromBfloat16) {
  test::TempDir dir("onnx");
  ::onnx::ModelProto m = empty_model("bf16");
  auto* g = m.mutable_graph();
  add_value(g->add_input(), "x", {"3"});
  add_value(g->add_output(), "y", {"3"});
  for (const auto& [in, out, to] :
       {std::tuple<const char*, const char*, int>{"x", "b", ::onnx::TensorProto::BFLOAT16},
        {"b", "y", ::onnx::TensorProto::FLOAT}}) {
    auto* a = add_node(g, "Cast", {in}, {out})->add_attribute();
    a->set_name("to");
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(to);
  }
  const onnx::Model model = onnx::load(write_model(dir, m), Device::cpu());
  const std::vector<float> y = model.run({{"x", from_vector<float>({1.0f, 3.14159f, -1e-3f}, {3})}})
                                   .at("y")
                                   .to_vector<float>();
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], 3.140625f);  // bf16 keeps 8 bits of mantissa (round to nearest even)
  EXPECT_NEAR(y[2], -1e-3, 1e-5);
}

TEST(OnnxModelTest, ReadsExternalDataAndRejectsBadReferences) {
  test::TempDir dir("onnx");
  ::onnx::ModelProto m = small_model();
  auto* w = m.mutable_graph()->mutable_initializer(0);
  const std::string raw = w->raw_data();
  {
    std::ofstream f(dir / "weights.bin", std::ios::binary);
    f << "PADDING!" << raw;  // at offset 8
  }
  w->clear_raw_data();
  w->set_data_location(::onnx::TensorProto::EXTERNAL);
  auto set = [&](const std::string& location, const std::string& offset,
                 const std::string& length) {
    w->clear_external_data();
    auto kv = [&](const char* k, const std::string& v) {
      auto* e = w->add_external_data();
      e->set_key(k);
      e->set_value(v);
    };
    kv("location", location);
    if (!offset.empty()) kv("offset", offset);
    if (!length.empty()) kv("length", length);
    return write_model(dir, m);
  };
  const Tensor x = from_vector<float>({1, 2, 3}, {1, 3});
  const onnx::Model ok = onnx::load(set("weights.bin", "8", "24"), Device::cpu());
  const std::vector<float> got = ok.run({{"X", x}}).at("Y").to_vector<float>();
  const std::vector<float> want = expected_y(x).to_vector<float>();
  EXPECT_EQ(got, want);
  expect_error([&] { onnx::load(set("missing.bin", "", ""), Device::cpu()); },
               {"missing.bin", "doesn't exist"});
  expect_error([&] { onnx::load(set("../weights.bin", "", ""), Device::cpu()); },
               {"not a path inside the model's directory"});
  expect_error([&] { onnx::load(set("/etc/passwd", "", ""), Device::cpu()); },
               {"not a path inside"});
  std::filesystem::create_symlink("/etc/hostname", dir / "link.bin");  // inside, leads out
  expect_error([&] { onnx::load(set("link.bin", "", ""), Device::cpu()); },
               {"leads outside the model's directory"});
  expect_error([&] { onnx::load(set("weights.bin", "16", "24"), Device::cpu()); },
               {"holds 32 bytes, the tensor reads 24 from offset 16"});
  expect_error([&] { onnx::load(set("weights.bin", "x", ""), Device::cpu()); },
               {"offset 'x' is not a byte count"});
  expect_error([&] { onnx::load(set("weights.bin", "0", ""), Device::cpu()); },
               {"holds 32 bytes", "needs 24"});
}

TEST(OnnxModelTest, CorruptFilesAreErrorsNeverCrashes) {
  test::TempDir dir("onnx");
  std::string good;
  small_model().SerializeToString(&good);
  auto load_bytes = [&](const std::string& bytes) {
    const std::string path = dir / "corrupt.onnx";
    {
      std::ofstream f(path, std::ios::binary);
      f << bytes;
    }
    try {
      const onnx::Model m = onnx::load(path, Device::cpu());
      m.run({{"X", zeros({2, 3})}});  // what loads must run or throw an ember::Error
      return 0;
    } catch (const Error&) {
      return 1;
    }
  };
  EXPECT_EQ(load_bytes(""), 1);
  EXPECT_EQ(load_bytes("not a model at all"), 1);
  int errors = 0;
  for (size_t n = 1; n < good.size(); n += 3) errors += load_bytes(good.substr(0, n));
  EXPECT_GT(errors, 0);
  uint64_t seed = 12345;
  for (int i = 0; i < 300; ++i) {  // deterministic bit flips, one to three per file
    std::string bad = good;
    for (int k = 0; k < 1 + i % 3; ++k) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      bad[(seed >> 33) % bad.size()] ^= char(1 << ((seed >> 20) % 8));
    }
    load_bytes(bad);
  }
  expect_error([] { onnx::load("/nonexistent/model.onnx"); }, {"cannot open"});
  expect_error([&] { onnx::load(dir.path()); }, {"[onnx]"});
}

// A subgraph attribute `name` of node n: an empty graph to fill.
::onnx::GraphProto* add_graph(::onnx::NodeProto* n, const std::string& name) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name(name);
  return a->mutable_g();
}

// y = If(c, then: X + K, else: X * K): the branches read X and K of the main graph.
::onnx::ModelProto if_model(bool cond_is_constant, bool cond_value) {
  ::onnx::ModelProto m = empty_model("if");
  auto* g = m.mutable_graph();
  add_value(g->add_input(), "X", {"2"});
  if (cond_is_constant) {
    ::onnx::TensorProto c;
    c.set_name("c");
    c.set_data_type(::onnx::TensorProto::BOOL);
    c.add_int32_data(cond_value);
    *g->add_initializer() = c;
  } else {
    add_value(g->add_input(), "c", {}, ::onnx::TensorProto::BOOL);
  }
  *g->add_initializer() = float_tensor("K", {2}, {10, 100});
  add_value(g->add_output(), "y", {"2"});
  auto* n = add_node(g, "If", {"c"}, {"y"}, "choose");
  auto* t = add_graph(n, "then_branch");
  add_node(t, "Add", {"X", "K"}, {"sum"});
  add_value(t->add_output(), "sum", {"2"});
  auto* e = add_graph(n, "else_branch");
  add_node(e, "Mul", {"X", "K"}, {"prod"});
  add_value(e->add_output(), "prod", {"2"});
  return m;
}

TEST(OnnxModelTest, IfRunsTheBranchItsConditionChooses) {
  test::TempDir dir("onnx");
  const Tensor x = from_vector<float>({1, 2}, {2});
  for (const DeviceInfo& d : available_devices()) {
    SCOPED_TRACE(d.device.str());
    const onnx::Model m = onnx::load(write_model(dir, if_model(false, false)), d.device);
    const Tensor yes = scalar_tensor(true, TensorOptions(DType::b8)),
                 no = scalar_tensor(false, TensorOptions(DType::b8));
    EXPECT_EQ(m.run({{"X", x}, {"c", yes}}).at("y").to(Device::ref()).to_vector<float>(),
              (std::vector<float>{11, 102}));
    EXPECT_EQ(m.run({{"X", x}, {"c", no}}).at("y").to(Device::ref()).to_vector<float>(),
              (std::vector<float>{10, 200}));
  }
  // A constant condition: only the chosen branch's result, for any X.
  for (bool c : {true, false}) {
    const onnx::Model m = onnx::load(write_model(dir, if_model(true, c)), Device::cpu());
    EXPECT_EQ(m.run({{"X", x}}).at("y").to(Device::ref()).to_vector<float>(),
              c ? (std::vector<float>{11, 102}) : (std::vector<float>{10, 200}));
  }
}

TEST(OnnxModelTest, IfOfConstantsIsFoldedAtLoad) {
  test::TempDir dir("onnx");
  ::onnx::ModelProto m = if_model(true, true);
  auto* g = m.mutable_graph();
  // Branches over constants only: the If is computed once, at load time.
  g->mutable_node(0)->mutable_attribute(0)->mutable_g()->mutable_node(0)->set_input(0, "K");
  g->mutable_node(0)->mutable_attribute(1)->mutable_g()->mutable_node(0)->set_input(0, "K");
  add_node(g, "Add", {"y", "X"}, {"z"}, "plus_x");
  add_value(g->add_output(), "z", {"2"});
  const onnx::Model model = onnx::load(write_model(dir, m), Device::cpu());
  EXPECT_EQ(model.folded_nodes(), 1);
  EXPECT_EQ(model.nodes(), 1);
  const auto out = model.run({{"X", from_vector<float>({1, 2}, {2})}});
  EXPECT_EQ(out.at("y").to(Device::ref()).to_vector<float>(), (std::vector<float>{20, 200}));
  EXPECT_EQ(out.at("z").to(Device::ref()).to_vector<float>(), (std::vector<float>{21, 202}));
}

// Loop(M, "", x0) -> (acc, history, table, zeros): body(i, cond, acc) -> (cond, acc + step *
// float(i), acc, an int64 [2, 3] table, ConstantOfShape(Shape(acc)) declared [s], a dim no
// inference finds); the body declares `seen` (history's rows) [seen_dim].
::onnx::ModelProto loop_model(const std::string& seen_dim) {
  ::onnx::ModelProto m = empty_model("loop");
  auto* g = m.mutable_graph();
  add_value(g->add_input(), "M", {}, ::onnx::TensorProto::INT64);
  add_value(g->add_input(), "x0", {"1"});
  add_value(g->add_output(), "acc", {"1"});
  add_value(g->add_output(), "history", {"n", "1"});
  add_value(g->add_output(), "table", {"n", "2", "3"}, ::onnx::TensorProto::INT64);
  add_value(g->add_output(), "zeros", {"n", "s"});
  *g->add_initializer() = float_tensor("step", {1}, {0.5f});
  ::onnx::TensorProto* tbl = g->add_initializer();
  tbl->set_name("tbl");
  tbl->set_data_type(::onnx::TensorProto::INT64);
  for (int64_t d : {2, 3}) tbl->add_dims(d);
  for (int64_t v = 0; v < 6; ++v) tbl->add_int64_data(v);
  auto* n = add_node(g, "Loop", {"M", "", "x0"}, {"acc", "history", "table", "zeros"}, "sum_loop");
  auto* b = add_graph(n, "body");
  add_value(b->add_input(), "i", {}, ::onnx::TensorProto::INT64);
  add_value(b->add_input(), "cond_in", {}, ::onnx::TensorProto::BOOL);
  add_value(b->add_input(), "acc_in", {"1"});
  auto* cast = add_node(b, "Cast", {"i"}, {"fi"});
  auto* to = cast->add_attribute();
  to->set_name("to");
  to->set_type(::onnx::AttributeProto::INT);
  to->set_i(::onnx::TensorProto::FLOAT);
  add_node(b, "Mul", {"fi", "step"}, {"inc"});
  add_node(b, "Add", {"acc_in", "inc"}, {"acc_out"});
  add_node(b, "Identity", {"cond_in"}, {"cond_out"});
  add_node(b, "Identity", {"acc_in"}, {"seen"});
  add_node(b, "Identity", {"tbl"}, {"tbl_out"});
  add_node(b, "Shape", {"acc_in"}, {"acc_shape"});
  add_node(b, "ConstantOfShape", {"acc_shape"}, {"zeros_out"});
  add_value(b->add_output(), "cond_out", {}, ::onnx::TensorProto::BOOL);
  add_value(b->add_output(), "acc_out", {"1"});
  add_value(b->add_output(), "seen", {seen_dim});
  add_value(b->add_output(), "tbl_out", {"2", "3"}, ::onnx::TensorProto::INT64);
  add_value(b->add_output(), "zeros_out", {"s"});
  return m;
}

TEST(OnnxModelTest, LoopCarriesValuesAndStacksScanOutputs) {
  test::TempDir dir("onnx");
  const std::string path = write_model(dir, loop_model("1"));
  for (const DeviceInfo& d : available_devices()) {
    SCOPED_TRACE(d.device.str());
    const onnx::Model model = onnx::load(path, d.device);
    const auto out = model.run({{"M", scalar_tensor(int64_t(4), TensorOptions(DType::i64))},
                                {"x0", from_vector<float>({1}, {1})}});
    EXPECT_EQ(out.at("acc").to(Device::ref()).to_vector<float>(),
              (std::vector<float>{4}));  // 1 + 0.5 (0 + 1 + 2 + 3)
    EXPECT_EQ(out.at("history").shape(), (Shape{4, 1}));
    EXPECT_EQ(out.at("history").to(Device::ref()).to_vector<float>(),
              (std::vector<float>{1, 1, 1.5, 2.5}));
    EXPECT_EQ(out.at("table").shape(), (Shape{4, 2, 3}));
    EXPECT_EQ(out.at("zeros").shape(), (Shape{4, 1}));
  }
}

// Zero iterations: the scan outputs are [0] followed by the body output's shape, of its type
// (they were float [0]), as ONNX Runtime gives; the carried values are the initial ones. A dim the
// body leaves symbolic ("d") is one ONNX's shape inference finds at load (`seen` is acc_in, [1]);
// one nothing finds is 0.
TEST(OnnxModelTest, LoopOfZeroIterationsGivesEmptyScanOutputsOfTheBodysShape) {
  test::TempDir dir("onnx");
  for (const char* seen_dim : {"1", "d"}) {
    const std::string path =
        write_model(dir, loop_model(seen_dim), std::string("loop_") + seen_dim + ".onnx");
    for (const DeviceInfo& d : available_devices()) {
      SCOPED_TRACE(d.device.str() + ", seen [" + seen_dim + "]");
      const onnx::Model model = onnx::load(path, d.device);
      const auto out = model.run({{"M", scalar_tensor(int64_t(0), TensorOptions(DType::i64))},
                                  {"x0", from_vector<float>({1}, {1})}});
      EXPECT_EQ(out.at("acc").to(Device::ref()).to_vector<float>(), (std::vector<float>{1}));
      EXPECT_EQ(out.at("history").shape(), (Shape{0, 1}));
      EXPECT_EQ(out.at("history").dtype(), DType::f32);
      EXPECT_EQ(out.at("table").shape(), (Shape{0, 2, 3}));
      EXPECT_EQ(out.at("table").dtype(), DType::i64);
      EXPECT_EQ(out.at("zeros").shape(), (Shape{0, 0}));  // the rank is known, "s" is not
    }
  }
}

// A Scan over a zero-length input: the state is the initial one, each scan output the body's
// declared shape with 0 at its scan axis (1 here), of the body's type.
TEST(OnnxModelTest, ScanOfZeroLengthGivesEmptyOutputsOfTheBodysShape) {
  test::TempDir dir("onnx");
  ::onnx::ModelProto m = empty_model("scan", 11);
  auto* g = m.mutable_graph();
  add_value(g->add_input(), "s0", {"1"});
  add_value(g->add_input(), "xs", {"n", "2"});
  add_value(g->add_output(), "s", {"1"});
  add_value(g->add_output(), "ys", {});
  auto* n = add_node(g, "Scan", {"s0", "xs"}, {"s", "ys"}, "scan");
  auto* a = n->add_attribute();
  a->set_name("num_scan_inputs");
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(1);
  auto* ax = n->add_attribute();
  ax->set_name("scan_output_axes");
  ax->set_type(::onnx::AttributeProto::INTS);
  ax->add_ints(1);
  auto* b = add_graph(n, "body");
  add_value(b->add_input(), "s_in", {"1"});
  add_value(b->add_input(), "x", {"2"});
  add_node(b, "Identity", {"s_in"}, {"s_out"});
  add_node(b, "Cast", {"x"}, {"y"})->add_attribute()->CopyFrom([] {
    ::onnx::AttributeProto to;
    to.set_name("to");
    to.set_type(::onnx::AttributeProto::INT);
    to.set_i(::onnx::TensorProto::INT64);
    return to;
  }());
  add_value(b->add_output(), "s_out", {"1"});
  add_value(b->add_output(), "y", {"2"}, ::onnx::TensorProto::INT64);
  const std::string path = write_model(dir, m);
  for (const DeviceInfo& d : available_devices()) {
    SCOPED_TRACE(d.device.str());
    const onnx::Model model = onnx::load(path, d.device);
    const auto out = model.run({{"s0", from_vector<float>({3}, {1})}, {"xs", zeros({0, 2})}});
    EXPECT_EQ(out.at("s").to(Device::ref()).to_vector<float>(), (std::vector<float>{3}));
    EXPECT_EQ(out.at("ys").shape(), (Shape{2, 0}));
    EXPECT_EQ(out.at("ys").dtype(), DType::i64);
    const auto two = model.run({{"s0", from_vector<float>({3}, {1})}, {"xs", ones({3, 2})}});
    EXPECT_EQ(two.at("ys").shape(), (Shape{2, 3}));
  }
}

TEST(OnnxModelTest, UnsupportedNodesInsideABranchAreNamed) {
  test::TempDir dir("onnx");
  ::onnx::ModelProto m = if_model(false, false);
  m.mutable_opset_import(0)->set_version(15);  // Bernoulli
  auto* t = m.mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_g();
  add_node(t, "Bernoulli", {"sum"}, {"draws"});
  expect_error([&] { onnx::load(write_model(dir, m), Device::cpu()); },
               {"node 'choose/then_branch/#1' (Bernoulli): op not mapped"});
}

// TfIdfVectorizer's IDF and TFIDF modes with weights (ONNX's test data covers TF only).
TEST(OnnxModelTest, TfIdfVectorizerWeighsItsCounts) {
  test::TempDir dir("onnx");
  for (const char* mode : {"TF", "IDF", "TFIDF"}) {
    SCOPED_TRACE(mode);
    ::onnx::ModelProto m = empty_model("tfidf");
    auto* g = m.mutable_graph();
    add_value(g->add_input(), "X", {"2", "5"}, ::onnx::TensorProto::INT64);
    add_value(g->add_output(), "Y", {"2", "3"});
    auto* n = add_node(g, "TfIdfVectorizer", {"X"}, {"Y"});
    auto ints = [&](const char* name, std::vector<int64_t> v) {
      auto* a = n->add_attribute();
      a->set_name(name);
      a->set_type(::onnx::AttributeProto::INTS);
      for (int64_t x : v) a->add_ints(x);
    };
    auto one = [&](const char* name, int64_t v) {
      auto* a = n->add_attribute();
      a->set_name(name);
      a->set_type(::onnx::AttributeProto::INT);
      a->set_i(v);
    };
    one("min_gram_length", 1);
    one("max_gram_length", 2);
    one("max_skip_count", 1);
    ints("ngram_counts", {0, 2});
    ints("pool_int64s", {2, 3, 2, 3});  // unigrams 2 and 3, the bigram (2, 3)
    ints("ngram_indexes", {2, 0, 1});
    auto* w = n->add_attribute();
    w->set_name("weights");
    w->set_type(::onnx::AttributeProto::FLOATS);
    for (float x : {0.5f, 2.f, 10.f}) w->add_floats(x);
    auto* md = n->add_attribute();
    md->set_name("mode");
    md->set_type(::onnx::AttributeProto::STRING);
    md->set_s(mode);
    const onnx::Model model = onnx::load(write_model(dir, m), Device::cpu());
    // Row 0: 2 twice, 3 twice, (2, 3) twice (skip 0; skip 1 pairs 1-3, 2-2, 3-3 are not in the
    // pool). Row 1: no 2, one 3, no bigram.
    const Tensor x = from_vector<int64_t>({1, 2, 3, 2, 3, 7, 7, 3, 9, 9}, {2, 5});
    const std::vector<float> y = model.run({{"X", x}}).at("Y").to(Device::ref()).to_vector<float>();
    const std::string md_s = mode;
    const std::vector<float> want = md_s == "TF"    ? std::vector<float>{2, 2, 2, 1, 0, 0}
                                    : md_s == "IDF" ? std::vector<float>{2, 10, 0.5, 2, 0, 0}
                                                    : std::vector<float>{4, 20, 1, 2, 0, 0};
    EXPECT_EQ(y, want);
  }
}

// Window attributes ONNX's shape inference divides by are checked first (strides 0 raised
// SIGFPE inside libonnx; blocksize 0 in Ember's SpaceToDepth).
TEST(OnnxModelTest, ZeroStridesAndBlockSizesAreErrorsNotCrashes) {
  test::TempDir dir("onnx");
  for (const auto& [op, attr] :
       std::vector<std::pair<std::string, std::string>>{{"MaxPool", "strides"},
                                                        {"AveragePool", "kernel_shape"},
                                                        {"SpaceToDepth", "blocksize"}}) {
    ::onnx::ModelProto m = empty_model("zero");
    auto* g = m.mutable_graph();
    add_value(g->add_input(), "X", {"1", "4", "4", "4"});
    add_value(g->add_output(), "Y", {"n", "c", "h", "w"});
    auto* n = add_node(g, op, {"X"}, {"Y"}, "zero");
    auto* a = n->add_attribute();
    a->set_name(attr);
    if (attr == "blocksize") {
      a->set_type(::onnx::AttributeProto::INT);
      a->set_i(0);
    } else {
      a->set_type(::onnx::AttributeProto::INTS);
      a->add_ints(0);
      a->add_ints(0);
      if (attr == "strides") {
        auto* k = n->add_attribute();
        k->set_name("kernel_shape");
        k->set_type(::onnx::AttributeProto::INTS);
        k->add_ints(2);
        k->add_ints(2);
      }
    }
    expect_error([&] { onnx::inspect(write_model(dir, m)); },
                 {"node 'zero' (" + op + "): attribute " + attr + " holds 0 (must be >= 1)"});
  }
}

// Resize scales that give a huge or non-finite output are errors before any allocation.
TEST(OnnxModelTest, ResizeToAHugeSizeIsAnError) {
  test::TempDir dir("onnx");
  ::onnx::ModelProto m = empty_model("resize");
  auto* g = m.mutable_graph();
  add_value(g->add_input(), "X", {"1", "1", "2", "2"});
  add_value(g->add_input(), "scales", {"4"});
  add_value(g->add_output(), "Y", {"a", "b", "c", "d"});
  add_node(g, "Resize", {"X", "", "scales"}, {"Y"}, "up");
  const onnx::Model model = onnx::load(write_model(dir, m), Device::cpu());
  const Tensor x = ones({1, 1, 2, 2});
  EXPECT_EQ(
      model.run({{"X", x}, {"scales", from_vector<float>({1, 1, 2, 2}, {4})}}).at("Y").shape(),
      (Shape{1, 1, 4, 4}));
  expect_error(
      [&] {
        model.run({{"X", x}, {"scales", from_vector<float>({1, 1, 1e9f, 1e9f}, {4})}});
      },
      {"Resize", "more than 2^36"});
  expect_error(
      [&] {
        model.run({{"X", x},
                   {"scales",
                    from_vector<float>({1, 1, std::numeric_limits<float>::infinity(), 1}, {4})}});
      },
      {"Resize", "no finite size"});
}

}  // namespace
}  // namespace ember
