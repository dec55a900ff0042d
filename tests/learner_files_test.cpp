// The Learner deletes only the old epoch checkpoints it wrote in its own output folder (issue
// 13 item 1): a resumed copy of a run folder leaves the original alone, a kept list edited to
// name other files deletes none of them, and keep_last rotation still works across a resume.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>

#include "ember/ember.h"
#include "ember/optim/sgd.h"
#include "ember/record/checkpoint.h"
#include "ember/record/safetensors.h"
#include "ember/train/learner.h"
#include "test_util.h"

using namespace ember;
using ember::test::list_dir;
using ember::test::read_bytes;
using ember::test::write_bytes;
namespace fs = std::filesystem;

namespace {

struct Lin : nn::UnaryModule {
  Tensor w, b;
  Lin() : nn::UnaryModule("Lin") {
    w = register_parameter("w", randn({3, 4}) * 0.3);
    b = register_parameter("b", zeros({3}));
  }
  Tensor forward(const Tensor& x) override { return linear(x, w, b); }
};

// A small run writing into `dir`: a linear classifier with SGD on 24 random points.
struct SmallRun {
  std::shared_ptr<Lin> model;
  std::shared_ptr<optim::SGD> opt;
  std::unique_ptr<train::Learner> learner;
  train::Loader loader;
  explicit SmallRun(const std::string& dir, int64_t keep_last = 2)
      : loader(
            [] {
              manual_seed(Device::cpu(), 5);
              const Tensor x = randn({24, 4});
              const Tensor y = remainder(arange(int64_t(24)), int64_t(3));
              return std::make_shared<data::TensorDataset>(x, y);
            }(),
            [] {
              data::DataLoaderOptions o;
              o.batch_size = 8;
              return o;
            }()) {
    manual_seed(Device::cpu(), 1);
    model = std::make_shared<Lin>();
    opt = std::make_shared<optim::SGD>(model->parameters(), optim::SGDOptions(0.1));
    train::LearnerOptions o;
    o.device = Device::cpu();
    o.output_dir = dir;
    o.progress = train::Progress::none;
    o.handle_sigint = false;
    o.keep_last = keep_last;
    o.monitor = "train_loss";
    learner = std::make_unique<train::Learner>(model, opt, train::cross_entropy_loss(), o);
  }
  train::FitResult fit(int64_t epochs) { return learner->fit(loader, nullptr, epochs); }
};

// Rewrites the learner state (JSON) of a checkpoint file in place.
void edit_learner_state(const std::string& path, const std::function<void(nlohmann::json&)>& fn) {
  record::SafetensorsFile f = record::load_safetensors(path);
  nlohmann::json j = nlohmann::json::parse(f.metadata.at("learner"));
  fn(j);
  f.metadata["learner"] = j.dump();
  record::save_safetensors(path, f.tensors, f.metadata);
}

using Names = std::vector<std::string>;

}  // namespace

TEST(LearnerFilesTest, CheckpointsListKeptFilesByBareName) {
  const ember::test::TempDir dir("kept");
  SmallRun r(dir);
  r.fit(3);
  EXPECT_EQ(list_dir(dir / "checkpoints"),
            (Names{"best.safetensors", "epoch-0002.safetensors", "epoch-0003.safetensors"}));
  const record::CheckpointFile f =
      record::read_checkpoint(dir / "checkpoints/epoch-0003.safetensors");
  const nlohmann::json j = nlohmann::json::parse(f.state.extra.at("learner"));
  EXPECT_EQ(j["kept"], (nlohmann::json{"epoch-0002.safetensors", "epoch-0003.safetensors"}));
  EXPECT_EQ(j["run_id"].get<std::string>().size(), 16u);
}

TEST(LearnerFilesTest, ResumingACopiedRunFolderLeavesTheOriginalAlone) {
  const ember::test::TempDir a("orig"), b("copy");
  {
    SmallRun r(a);
    r.fit(2);
  }
  const Names before = list_dir(a / "checkpoints");
  ASSERT_EQ(before,
            (Names{"best.safetensors", "epoch-0001.safetensors", "epoch-0002.safetensors"}));
  std::vector<std::string> bytes;
  for (const auto& n : before) bytes.push_back(read_bytes(a / ("checkpoints/" + n)));
  fs::remove_all(b.path());
  fs::copy(a.path(), b.path(), fs::copy_options::recursive);

  SmallRun c(b);
  c.learner->resume(b);
  c.fit(4);  // epochs 3 and 4: rotates epoch-0001 and epoch-0002 out of the copy
  EXPECT_EQ(list_dir(a / "checkpoints"), before);
  for (size_t i = 0; i < before.size(); ++i)
    EXPECT_EQ(read_bytes(a / ("checkpoints/" + before[i])), bytes[i]) << before[i];
  // The copy's own old checkpoints are this run's (the same run id): rotated out as usual.
  EXPECT_EQ(list_dir(b / "checkpoints"),
            (Names{"best.safetensors", "epoch-0003.safetensors", "epoch-0004.safetensors"}));
}

TEST(LearnerFilesTest, ACheckpointsFolderLinkedToAnotherRunLosesNothing) {
  // A "copy" whose checkpoints/ is a symbolic link to the original's: resolved, the files lie
  // outside the copy's folder, so rotation there must not delete them.
  const ember::test::TempDir a("orig_link"), b("link_copy");
  {
    SmallRun r(a);
    r.fit(2);
  }
  const Names before = list_dir(a / "checkpoints");
  fs::create_directories(b.path());
  for (const auto& e : fs::directory_iterator(a.path()))
    if (e.path().filename() != "checkpoints")
      fs::copy(e.path(), b / e.path().filename().string(), fs::copy_options::recursive);
  fs::create_directory_symlink(a / "checkpoints", b / "checkpoints");
  SmallRun c(b);
  c.learner->resume(b);
  c.fit(4);
  for (const auto& n : before)
    if (n != "best.safetensors") EXPECT_TRUE(fs::exists(a / ("checkpoints/" + n))) << n;
}

TEST(LearnerFilesTest, EditedKeptListDeletesNoOtherFile) {
  const ember::test::TempDir dir("edited"), elsewhere("victims");
  {
    SmallRun r(dir);
    r.fit(2);
  }
  // Files the edited list names, none of which the run may delete.
  const std::string up = dir / "x", other = dir / "checkpoints/other-name.txt",
                    abs = elsewhere / "victim.txt", foreign = elsewhere / "epoch-0001.safetensors";
  for (const std::string& p : {up, other, abs, foreign}) write_bytes(p, "user data");
  const std::string ck = dir / "checkpoints/epoch-0002.safetensors";
  edit_learner_state(ck, [&](nlohmann::json& j) {
    j["kept"] = {"../x",
                 abs,
                 dir / "checkpoints/../x",
                 "other-name.txt",
                 foreign,
                 "checkpoints/epoch-0001.safetensors",
                 "epoch-01.safetensors",
                 "epoch-0009.safetensors",
                 7,
                 "epoch-0002.safetensors"};
  });
  SmallRun c(dir);
  testing::internal::CaptureStderr();
  c.learner->resume(ck);
  const std::string warnings = testing::internal::GetCapturedStderr();
  for (const std::string& n : {std::string("../x"), abs, std::string("other-name.txt"), foreign,
                               std::string("epoch-0009.safetensors"), std::string("7")})
    EXPECT_NE(warnings.find("ignoring \"" + n + "\" in the list of kept checkpoints"),
              std::string::npos)
        << n << "\n"
        << warnings;
  c.fit(5);
  for (const std::string& p : {up, other, abs, foreign}) EXPECT_EQ(read_bytes(p), "user data") << p;
  // epoch-0001 was not in the list any more (only as a path): it stays; the rest rotate.
  EXPECT_EQ(list_dir(dir / "checkpoints"),
            (Names{"best.safetensors", "epoch-0001.safetensors", "epoch-0004.safetensors",
                   "epoch-0005.safetensors", "other-name.txt"}));
}

TEST(LearnerFilesTest, RotationAfterResumeDeletesOnlyThisRunsCheckpoints) {
  const ember::test::TempDir dir("rotate"), other_dir("other");
  {
    SmallRun r(dir);
    r.fit(2);
  }
  // Another run's checkpoint under a name this run's list holds: not this run's, so kept.
  {
    SmallRun o(other_dir);
    o.fit(1);
  }
  const std::string mine = dir / "checkpoints/epoch-0001.safetensors";
  const std::string theirs = read_bytes(other_dir / "checkpoints/epoch-0001.safetensors");
  write_bytes(mine, theirs);
  SmallRun c(dir);
  c.learner->resume(dir);
  testing::internal::CaptureStderr();
  c.fit(3);
  const std::string warnings = testing::internal::GetCapturedStderr();
  EXPECT_NE(warnings.find("not deleting " + mine + ": it is not a checkpoint this run wrote"),
            std::string::npos)
      << warnings;
  EXPECT_EQ(read_bytes(mine), theirs);
  c.fit(4);  // epoch-0002 is this run's (written before the resume): deleted
  EXPECT_EQ(list_dir(dir / "checkpoints"),
            (Names{"best.safetensors", "epoch-0001.safetensors", "epoch-0003.safetensors",
                   "epoch-0004.safetensors"}));
  // A third process goes on rotating what the second wrote.
  SmallRun d(dir);
  d.learner->resume(dir);
  d.fit(6);
  EXPECT_EQ(list_dir(dir / "checkpoints"),
            (Names{"best.safetensors", "epoch-0001.safetensors", "epoch-0005.safetensors",
                   "epoch-0006.safetensors"}));
}

TEST(LearnerFilesTest, OutOfRangeLearnerStateNamesTheField) {
  const ember::test::TempDir dir("state");
  {
    SmallRun r(dir);
    r.fit(2);
  }
  const std::string good = dir / "checkpoints/epoch-0002.safetensors";
  const std::string bad = dir / "bad.safetensors";
  const std::string original = read_bytes(good);
  // Each edit, then resume(bad): an error naming the file and the field, nothing changed.
  auto expect_refused = [&](const std::function<void(nlohmann::json&, record::Metadata&)>& edit,
                            const std::vector<std::string>& pieces) {
    write_bytes(bad, original);
    record::SafetensorsFile f = record::load_safetensors(bad);
    nlohmann::json j = nlohmann::json::parse(f.metadata.at("learner"));
    edit(j, f.metadata);
    f.metadata["learner"] = j.dump();
    record::save_safetensors(bad, f.tensors, f.metadata);
    SmallRun c(dir);
    const std::vector<float> w = c.model->w.to_vector<float>();
    std::vector<std::string> all = {bad + ": "};
    all.insert(all.end(), pieces.begin(), pieces.end());
    ember::test::expect_error([&] { c.learner->resume(bad); }, all);
    EXPECT_EQ(c.learner->epochs_completed(), 0) << pieces[0];
    EXPECT_EQ(c.model->w.to_vector<float>(), w) << pieces[0];
    EXPECT_EQ(c.opt->state(c.model->w), nullptr) << pieces[0];
  };
  using J = nlohmann::json;
  using M = record::Metadata;
  // It resumed into epochs labelled -2..2.
  expect_refused([](J&, M& m) { m["epoch"] = "-3"; },
                 {"[load_checkpoint]", "field 'epoch' = \"-3\" is not a non-negative integer"});
  expect_refused([](J&, M& m) { m["step"] = "-1"; }, {"field 'step' = \"-1\""});
  expect_refused(
      [](J&, M& m) { m["best_epoch"] = "3"; },
      {"[Learner::resume]", "field 'best_epoch' = 3 is not in [0, 2] (2 epochs completed"});
  expect_refused([](J&, M& m) { m["best_epoch"] = "-1"; },
                 {"[Learner::resume]", "field 'best_epoch' = -1 is not in [0, 2]"});
  expect_refused([](J& j, M&) { j["epoch_base"] = 2; },
                 {"[Learner::resume]", "field 'learner.epoch_base' = 2 is not 1"});
  expect_refused([](J& j, M&) { j["history"].erase(1); },
                 {"field 'learner.history' holds 1 entries, not one per completed epoch (2)"});
  expect_refused([](J& j, M&) { j["history"][1]["epoch"] = 1e300; },
                 {"field 'learner.history[1].epoch' = 1e+300 is not 2"});
  expect_refused([](J& j, M&) { j["history"][0]["seconds"] = -1; },
                 {"field 'learner.history[0].seconds' = -1 is not a finite number >= 0"});
  expect_refused([](J& j, M&) { j["es_bad_epochs"] = -1; },
                 {"field 'learner.es_bad_epochs' = \"-1\" is not a non-negative integer <= 2"});
  expect_refused([](J& j, M&) { j["es_bad_epochs"] = 0.5; },
                 {"field 'learner.es_bad_epochs' = 0.5"});
  expect_refused([](J& j, M&) { j["es_bad_epochs"] = "1"; },
                 {"field 'learner.es_bad_epochs' = \"\"1\"\""});
  // The unedited file resumes.
  SmallRun c(dir);
  c.learner->resume(good);
  EXPECT_EQ(c.learner->epochs_completed(), 2);
}
