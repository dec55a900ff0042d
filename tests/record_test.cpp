// ember::record: safetensors files (round trips, the PyTorch golden, corrupt files, atomic
// writes, load_into) and training checkpoints.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ember/autograd.h"
#include "ember/ember.h"
#include "ember/optim/adam.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/record/checkpoint.h"
#include "ember/record/safetensors.h"
#include "test_util.h"

using namespace ember;
using ember::test::list_dir;
using ember::test::read_bytes;
using ember::test::write_bytes;

namespace {

// A safetensors file from a header text and a data section.
std::string make_file(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[size_t(i)] = char((n >> (8 * i)) & 0xff);
  return out + header + data;
}
// Expects load_safetensors(path) to throw ember::Error naming the file and `problem`.
void expect_rejected(const std::string& path, const std::string& problem) {
  try {
    record::load_safetensors(path);
    ADD_FAILURE() << "loaded a corrupt file: " << problem;
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("[load_safetensors]"), std::string::npos) << msg;
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find(problem), std::string::npos) << msg;
  }
}

// The tensors of tests/golden/check_safetensors.py's EXPECTED, built in Ember.
nn::StateDict golden_tensors() {
  nn::StateDict d;
  d.set("a.f32", tensor<float>({-1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 1.5f}, {2, 3}));
  d.set("b.f64", tensor<double>({1.0 / 3.0, -2.5, 1e300}));
  d.set("c.f16",
        tensor<float>({0.5f, -1.25f, 65504.0f, std::ldexp(1.0f, -14)}, {2, 2}).to(DType::f16));
  d.set("d.bf16", tensor<float>({1.0f, -3.5f, 0.0078125f}).to(DType::bf16));
  d.set("e.i8", tensor<int8_t>({-128, -1, 0, 127}));
  d.set("f.i16", tensor<int16_t>({-32768, 300, 32767}));
  d.set("g.i32", tensor<int32_t>({INT32_MIN, 7, INT32_MAX}));
  d.set("h.i64", tensor<int64_t>({INT64_MIN, 42, INT64_MAX}));
  d.set("i.u8", tensor<uint8_t>({0, 200, 255}));
  d.set("j.u16", tensor<uint16_t>({1, 65535}));
  d.set("k.u32", tensor<uint32_t>({3, 4294967295u}));
  d.set("l.u64", tensor<uint64_t>({5, UINT64_MAX}));
  d.set("m.bool", tensor<bool>({true, false, true}));
  d.set("n.empty", zeros({0, 3}));
  d.set("o.scalar", full({}, int64_t(7), DType::i64));
  return d;
}
const record::Metadata kGoldenMeta = {{"format", "pt"},
                                      {"source", "tests/golden/check_safetensors.py"}};

// Bit-exact equality of two tensors (shape, dtype, bytes).
void expect_same(const Tensor& a, const Tensor& b, const std::string& name) {
  ASSERT_EQ(a.dtype(), b.dtype()) << name;
  ASSERT_EQ(a.shape(), b.shape()) << name;
  const Tensor ca = a.to(Device::cpu()).contiguous(), cb = b.to(Device::cpu()).contiguous();
  const size_t n = size_t(ca.numel() * ca.element_size());
  EXPECT_EQ(n == 0 ? 0 : std::memcmp(ca.raw_data(), cb.raw_data(), n), 0) << name;
}

}  // namespace

TEST(SafetensorsTest, RoundTripEveryDtype) {
  const ember::test::TempDir dir_tmp("rt");
  const std::string& dir = dir_tmp.path();
  nn::StateDict d;
  const Tensor base = tensor<float>({0, 1, 2, 3, 4, 5}, {2, 3});
  for (DType t : kAllDTypes) d.set(std::string("t_") + dtype_name(t), base.to(t));
  d.set("transposed", base.t());               // non-contiguous input
  d.set("scalar", full({}, 2.5, DType::f64));  // 0-d
  d.set("empty", zeros({3, 0}, DType::i32));
  const std::string path = dir + "/all.safetensors";
  record::save_safetensors(path, d, {{"k", "v"}, {"empty", ""}});
  const record::SafetensorsFile f = record::load_safetensors(path);
  ASSERT_EQ(f.tensors.size(), d.size());
  for (const auto& [name, t] : d.items()) {
    ASSERT_TRUE(f.tensors.contains(name)) << name;
    expect_same(f.tensors.at(name), t.contiguous(), name);
  }
  EXPECT_EQ(f.tensors.at("transposed").shape(), (Shape{3, 2}));
  EXPECT_EQ(f.tensors.at("transposed").to_vector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(f.metadata, (record::Metadata{{"k", "v"}, {"empty", ""}}));
  // The reference device too.
  const auto r = record::load_safetensors(path, Device::ref());
  EXPECT_EQ(r.tensors.at("t_int64").device(), Device::ref());
}

TEST(SafetensorsTest, ReadsTorchGolden) {
  const std::string path =
      std::string(EMBER_TEST_DATA_DIR) + "/golden/safetensors_torch.safetensors";
  const record::SafetensorsFile f = record::load_safetensors(path);
  const nn::StateDict want = golden_tensors();
  ASSERT_EQ(f.tensors.size(), want.size());
  for (const auto& [name, t] : want.items()) {
    ASSERT_TRUE(f.tensors.contains(name)) << name;
    expect_same(f.tensors.at(name), t, name);
  }
  EXPECT_EQ(f.tensors.at("h.i64").to_vector<int64_t>()[0], INT64_MIN);
  EXPECT_EQ(f.tensors.at("l.u64").to_vector<uint64_t>()[1], UINT64_MAX);
  EXPECT_EQ(f.tensors.at("d.bf16").to_vector<float>(),
            (std::vector<float>{1.0f, -3.5f, 0.0078125f}));
  EXPECT_EQ(f.metadata, kGoldenMeta);
}

TEST(SafetensorsTest, WritesTorchGoldenBytes) {
  // Same tensors and metadata -> the same bytes as the reference writer (layout, order, padding).
  const std::string path =
      std::string(EMBER_TEST_DATA_DIR) + "/golden/safetensors_torch.safetensors";
  EXPECT_EQ(record::serialize_safetensors(golden_tensors(), kGoldenMeta), read_bytes(path));
}

TEST(SafetensorsTest, HeaderIsPaddedAndOrderedByDtypeThenName) {
  nn::StateDict d;
  d.set("z", tensor<uint8_t>({1}));
  d.set("b", tensor<float>({1}));
  d.set("a", tensor<float>({2}));
  d.set("w", tensor<double>({3}));
  const std::string bytes = record::serialize_safetensors(d);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | uint8_t(bytes[size_t(i)]);
  EXPECT_EQ(n % 8, 0u);
  const std::string header = bytes.substr(8, n);
  EXPECT_EQ(header.find("__metadata__"), std::string::npos);  // omitted when empty
  // F64 first, then F32 by name, then U8.
  EXPECT_LT(header.find("\"w\""), header.find("\"a\""));
  EXPECT_LT(header.find("\"a\""), header.find("\"b\""));
  EXPECT_LT(header.find("\"b\""), header.find("\"z\""));
  EXPECT_EQ(bytes.size(), 8 + n + 8 + 4 + 4 + 1);
}

TEST(SafetensorsTest, RejectsCorruptFiles) {
  const ember::test::TempDir dir_tmp("bad");
  const std::string& dir = dir_tmp.path();
  const std::string p = dir + "/bad.safetensors";
  const std::string ok_header = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string data(8, '\0');
  ASSERT_NO_THROW({
    write_bytes(p, make_file(ok_header, data));
    record::load_safetensors(p);
  });
  write_bytes(p, "abc");
  expect_rejected(p, "truncated file");
  write_bytes(p, make_file(ok_header, data).substr(0, 8 + ok_header.size() + 5));
  expect_rejected(p, "out of range");
  // The offsets printed are the file's, counting the 8-byte length before the header.
  {
    const std::string h = ok_header;
    const std::string cut = make_file(h, data).substr(0, 8 + h.size() + 5);
    write_bytes(p, cut);
    expect_rejected(p, "(the data section is file bytes " + std::to_string(8 + h.size()) + " to " +
                           std::to_string(cut.size()) + "; truncated file?)");
  }
  std::string huge = make_file(ok_header, data);
  huge[7] = char(0x7f);
  write_bytes(p, huge);
  expect_rejected(p, "exceeds the limit");
  std::string longer = make_file(ok_header, data);
  longer[0] = char(200);  // 200 > file size, below the limit
  write_bytes(p, longer);
  expect_rejected(p, "header length 200 (file bytes 8 to 208) exceeds the file size (" +
                         std::to_string(longer.size()) + " bytes)");
  write_bytes(p, make_file(R"({"x":{"dtype":"F32",)", data));
  expect_rejected(p, "not valid JSON");
  write_bytes(p, make_file(R"([1, 2])", data));
  expect_rejected(p, "not a JSON object");
  write_bytes(p, make_file(R"({"x":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}})", data));
  expect_rejected(p, "unknown dtype");
  write_bytes(p, make_file(R"({"x":{"dtype":"F8_E4M3","shape":[8],"data_offsets":[0,8]}})", data));
  expect_rejected(p, "not supported");
  write_bytes(p, make_file(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", data));
  expect_rejected(p, "needs 12");
  write_bytes(p, make_file(R"({"x":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", data));
  expect_rejected(p, "negative");
  write_bytes(p, make_file(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", data));
  expect_rejected(p, "out of range");
  write_bytes(p, make_file(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[4,0]}})", data));
  expect_rejected(p, "end before they begin");
  write_bytes(p, make_file(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                           R"("y":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                           data));
  expect_rejected(p, "overlaps");
  write_bytes(p, make_file(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", data));
  expect_rejected(p, "gap");
  write_bytes(p, make_file(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                           R"("x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                           data));
  expect_rejected(p, "names \"x\" twice");
  write_bytes(p, make_file(ok_header, data + "xx"));
  expect_rejected(p, "data section has 10");
  write_bytes(p, make_file(R"({"x":{"dtype":"F32","shape":[2]}})", data));
  expect_rejected(p, "has no data_offsets");
  write_bytes(
      p,
      make_file(R"({"__metadata__":{"a":1},"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                data));
  expect_rejected(p, "not a string");
  write_bytes(
      p,
      make_file(
          R"({"x":{"dtype":"U8","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,8]}})",
          data));
  expect_rejected(p, "too large");
  expect_rejected(dir + "/missing.safetensors", "cannot open");
  expect_rejected(dir, "is a directory");
}

TEST(SafetensorsTest, EveryTruncationAndByteFlipIsAnErrorNotACrash) {
  nn::StateDict d;
  d.set("w", tensor<float>({1, 2, 3, 4}, {2, 2}));
  d.set("b", tensor<int64_t>({5}));
  const std::string good = record::serialize_safetensors(d, {{"m", "x"}});
  for (size_t n = 0; n < good.size(); ++n)
    EXPECT_THROW(record::deserialize_safetensors(good.substr(0, n), "cut"), Error) << n;
  // Flipping any header byte either still parses to a valid file or throws ember::Error.
  uint64_t hlen = uint8_t(good[0]);
  for (size_t i = 0; i < 8 + hlen; ++i) {
    std::string bad = good;
    bad[i] = char(bad[i] ^ 0x5a);
    try {
      record::deserialize_safetensors(bad, "flip");
    } catch (const Error&) {
    }
  }
}

TEST(SafetensorsTest, AtomicWriteLeavesNoTempFile) {
  const ember::test::TempDir dir_tmp("atomic");
  const std::string& dir = dir_tmp.path();
  nn::StateDict d;
  d.set("w", tensor<float>({1, 2}));
  record::save_safetensors(dir + "/m.safetensors", d);
  d.set("v", tensor<float>({3}));
  record::save_safetensors(dir + "/m.safetensors", d);  // replaces it
  EXPECT_EQ(list_dir(dir), (std::vector<std::string>{"m.safetensors"}));
  EXPECT_EQ(record::load_safetensors(dir + "/m.safetensors").tensors.size(), 2u);
  // A directory that does not exist: an error naming the path, nothing left behind.
  try {
    record::save_safetensors(dir + "/no/such/m.safetensors", d);
    ADD_FAILURE() << "wrote into a missing directory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir + "/no/such/m.safetensors"), std::string::npos);
  }
  EXPECT_EQ(list_dir(dir), (std::vector<std::string>{"m.safetensors"}));
  nn::StateDict bad;
  bad.set("u", Tensor());
  EXPECT_THROW(record::save_safetensors(dir + "/u.safetensors", bad), Error);
  EXPECT_EQ(list_dir(dir), (std::vector<std::string>{"m.safetensors"}));
}

namespace {
struct Pair : nn::Module {
  Tensor w, b;
  Pair(int64_t n = 3) : nn::Module("Pair") {
    w = register_parameter("w", zeros({2, n}));
    b = register_buffer("b", zeros({2}, DType::i64));
  }
};
}  // namespace

TEST(SafetensorsTest, LoadIntoChecksNamesShapesAndDtypes) {
  const ember::test::TempDir dir_tmp("into");
  const std::string& dir = dir_tmp.path();
  Pair src;
  {
    NoGradGuard g;
    src.w.copy_(tensor<float>({1, 2, 3, 4, 5, 6}, {2, 3}));
    src.b.copy_(tensor<int64_t>({7, 8}));
  }
  record::save_module(dir + "/p.safetensors", src, {{"arch", "pair"}});
  Pair dst;
  record::Metadata meta;
  EXPECT_EQ(record::load_into(dst, dir + "/p.safetensors", true, &meta), "");
  EXPECT_EQ(dst.w.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(dst.b.to_vector<int64_t>(), (std::vector<int64_t>{7, 8}));
  EXPECT_EQ(meta.at("arch"), "pair");

  Pair wrong(4);
  try {
    record::load_into(wrong, dir + "/p.safetensors");
    ADD_FAILURE();
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("[load_into]"), std::string::npos) << m;
    EXPECT_NE(m.find("p.safetensors"), std::string::npos) << m;
    EXPECT_NE(m.find("w (file float32 [2, 3], model float32 [2, 4])"), std::string::npos) << m;
  }
  EXPECT_EQ(wrong.w.to_vector<float>(), std::vector<float>(8, 0.0f));  // unchanged
  nn::StateDict typed;
  typed.set("w", zeros({2, 3}, DType::f64));
  typed.set("b", zeros({2}, DType::i64));
  record::save_safetensors(dir + "/t.safetensors", typed);
  EXPECT_THROW(record::load_into(dst, dir + "/t.safetensors"), Error);

  nn::StateDict partial;
  partial.set("w", full({2, 3}, 9.0));
  partial.set("extra", zeros({1}));
  record::save_safetensors(dir + "/q.safetensors", partial);
  try {
    record::load_into(dst, dir + "/q.safetensors");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing: b; unexpected: extra"), std::string::npos);
  }
  EXPECT_EQ(record::load_into(dst, dir + "/q.safetensors", false), "missing: b; unexpected: extra");
  EXPECT_EQ(dst.w.to_vector<float>(), std::vector<float>(6, 9.0f));
  EXPECT_EQ(dst.b.to_vector<int64_t>(), (std::vector<int64_t>{7, 8}));
}

TEST(CheckpointTest, RandomStateReproducesDraws) {
  manual_seed(Device::cpu(), 123);
  (void)rand({5});
  const RandomState st = random_state(Device::cpu());
  EXPECT_EQ(st.seed, 123u);
  EXPECT_EQ(st.offset, 5u);
  const std::vector<float> a = rand({7}).to_vector<float>();
  set_random_state(Device::cpu(), st);
  EXPECT_EQ(rand({7}).to_vector<float>(), a);
}

TEST(CheckpointTest, RestoresModelOptimizerSchedulerAndRng) {
  const ember::test::TempDir dir_tmp("ckpt");
  const std::string& dir = dir_tmp.path();
  auto train_steps = [](Pair& m, optim::Optimizer& opt, optim::LRScheduler& s, int n) {
    for (int i = 0; i < n; ++i) {
      const Tensor loss = (m.w * m.w * 0.5 + m.w * 0.1).sum();
      loss.backward();
      opt.step();
      opt.zero_grad();
      s.step();
    }
  };
  manual_seed(7);
  Pair a;
  {
    NoGradGuard g;
    a.w.copy_(randn({2, 3}));
  }
  auto opt_a = std::make_shared<optim::Adam>(a.parameters(), optim::AdamOptions(0.1));
  optim::StepLR sched_a(opt_a, 2, 0.5);
  train_steps(a, *opt_a, sched_a, 3);
  manual_seed(Device::cpu(), 99);
  (void)rand({11});
  record::TrainingState st;
  st.epoch = 3;
  st.step = 3;
  st.batch = 0;
  st.best_metric = 0.25;
  st.best_metric_name = "valid_loss";
  st.best_epoch = 2;
  st.loader_epoch = 3;
  st.loader_seed = 18446744073709551615ull;
  st.rng = record::capture_random_states({Device::cpu()});
  st.user_json = R"({"lr": [0.1, 0.2]})";
  st.extra["note"] = "hello";
  const std::string path = dir + "/c.safetensors";
  record::save_checkpoint(path, {&a, opt_a.get(), &sched_a}, st);
  EXPECT_EQ(list_dir(dir), (std::vector<std::string>{"c.safetensors"}));
  // The continuation of the original run.
  const std::vector<float> draws = rand({4}).to_vector<float>();
  train_steps(a, *opt_a, sched_a, 2);

  manual_seed(1);
  Pair b;
  auto opt_b = std::make_shared<optim::Adam>(b.parameters(), optim::AdamOptions(0.1));
  optim::StepLR sched_b(opt_b, 2, 0.5);
  const record::TrainingState back = record::load_checkpoint(path, {&b, opt_b.get(), &sched_b});
  EXPECT_EQ(back.epoch, 3);
  EXPECT_EQ(back.best_metric, 0.25);
  EXPECT_EQ(back.best_metric_name, "valid_loss");
  EXPECT_EQ(back.best_epoch, 2);
  EXPECT_EQ(back.loader_seed, 18446744073709551615ull);
  EXPECT_EQ(back.user_json, st.user_json);
  EXPECT_EQ(back.extra.at("note"), "hello");
  EXPECT_EQ(rand({4}).to_vector<float>(), draws);  // the generator is where it was
  EXPECT_EQ(sched_b.get_last_lr(), std::vector<double>{0.05});
  train_steps(b, *opt_b, sched_b, 2);
  expect_same(b.w, a.w, "w after resumed steps");  // bit-identical continuation
  EXPECT_EQ(sched_b.get_last_lr(), sched_a.get_last_lr());

  // The model part alone, and errors.
  Pair c;
  record::load_checkpoint(path, {&c}, false);
  record::CheckpointFile f = record::read_checkpoint(path);
  EXPECT_TRUE(f.model.contains("w"));
  EXPECT_TRUE(f.optimizer.contains("state.0.exp_avg"));
  EXPECT_TRUE(f.scheduler.contains("last_epoch"));
  nn::StateDict plain;
  plain.set("w", zeros({1}));
  record::save_safetensors(dir + "/plain.safetensors", plain);
  try {
    record::load_checkpoint(dir + "/plain.safetensors", {&c});
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[load_checkpoint]"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("plain.safetensors"), std::string::npos);
  }
  Pair wide(5);
  EXPECT_THROW(record::load_checkpoint(path, {&wide}), Error);
  EXPECT_THROW(record::save_checkpoint(dir + "/x.safetensors", {}, st), Error);
}
