// `ember train` on Fashion-MNIST: summaries, learning, interruption and --resume
// (tests/cli_util.h).
#include "cli_util.h"

#include <cstdio>
#include <iterator>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "ember/record/safetensors.h"

using namespace ember::cli_test;

TEST(CliTestTrain, ShortMlpRunWritesSummaryAndLearns) {
  REQUIRE_FASHION();
  TempDir dir;
  Result r = run_ember("train fashion-mnist --limit-train 2000 --epochs 1 --model mlp --out " +
                       (dir / "run"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find(" on cpu, 1 epoch, batch 64, "), std::string::npos) << r.output;
  const json s = read_json(dir / "run/summary.json");
  ASSERT_TRUE(s.is_object());
  EXPECT_EQ(s["dataset"], "fashion-mnist");
  EXPECT_EQ(s["model"], "mlp");
  EXPECT_EQ(s["device"], "cpu");
  EXPECT_EQ(s["status"], "completed");
  EXPECT_EQ(s["epochs"], 1);
  EXPECT_EQ(s["steps"], 32);  // ceil(2000 / 64)
  EXPECT_EQ(s["train_samples"], 2000);
  EXPECT_EQ(s["test_samples"], 10000);
  // Chance is 10% accuracy and a loss of ln(10) = 2.30; 2,000 images reach about 75% / 0.7.
  EXPECT_GT(s["test_accuracy"].get<double>(), 0.6);
  EXPECT_LE(s["test_accuracy"].get<double>(), 1.0);
  EXPECT_LT(s["test_loss"].get<double>(), 1.2);
  EXPECT_GT(s["train_samples_per_second"].get<double>(), 0.0);
  EXPECT_GT(s["wall_seconds"].get<double>(), 0.0);
  ASSERT_EQ(s["history"].size(), 1u);
  // The status line is rounded (it printed 0.8234999775886536 and 1234.5678901 samples/s).
  EXPECT_TRUE(std::regex_search(
      r.output, std::regex("\nstatus completed: test accuracy [0-9]+\\.[0-9]{2}%, test loss "
                           "[0-9.e+-]+, [0-9]+ training samples/s, [0-9]+\\.[0-9] s; summary in ")))
      << r.output;
  char pct[32];
  std::snprintf(pct, sizeof pct, "test accuracy %.2f%%", 100 * s["test_accuracy"].get<double>());
  EXPECT_NE(r.output.find(pct), std::string::npos) << r.output;
  for (const char* f : {"metrics.csv", "metrics.json", "report.html", "model.safetensors",
                        "checkpoints/best.safetensors"})
    EXPECT_TRUE(fs::exists(dir / ("run/" + std::string(f)))) << f;

  // eval of the saved model reproduces the test accuracy of the last epoch.
  r = run_ember("eval --checkpoint " + (dir / "run/model.safetensors"));
  ASSERT_EQ(r.status, 0) << r.output;
  char acc[32];  // a percentage with 2 decimals, as the train status line
  std::snprintf(acc, sizeof acc, "%.2f%%", 100 * s["test_accuracy"].get<double>());
  EXPECT_NE(r.output.find(std::string("test accuracy: ") + acc), std::string::npos) << r.output;
  char loss[32];  // 4 significant digits
  std::snprintf(loss, sizeof loss, "%.4g", s["test_loss"].get<double>());
  EXPECT_NE(r.output.find(std::string("test loss: ") + loss + "\n"), std::string::npos) << r.output;
  // --dataset naming the recorded dataset is accepted (another one: EvalAndPredictRefuse...).
  r = run_ember("eval --dataset fashion-mnist --checkpoint " + (dir / "run/model.safetensors"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find(std::string("test accuracy: ") + acc), std::string::npos) << r.output;
}

TEST(CliTestTrain, CnnLossDecreasesOnATinyRun) {
  REQUIRE_FASHION();
  TempDir dir;
  Result r = run_ember(
      "train fashion-mnist --model cnn --limit-train 192 --limit-test 128 --epochs 2 "
      "--batch-size 32 --out " +
      (dir / "run"));
  ASSERT_EQ(r.status, 0) << r.output;
  const json s = read_json(dir / "run/summary.json");
  ASSERT_EQ(s["history"].size(), 2u) << s.dump();
  EXPECT_NE(r.output.find(" on cpu, 2 epochs, batch 32, "), std::string::npos) << r.output;
  const double l0 = s["history"][0]["train_loss"], l1 = s["history"][1]["train_loss"];
  EXPECT_LT(l1, l0);
  EXPECT_LT(l1, 2.0);  // below chance (ln 10 = 2.30)
  EXPECT_EQ(s["model"], "cnn");
  EXPECT_EQ(s["steps"], 12);  // 2 x 192 / 32
}

TEST(CliTestTrain, ResumeAfterInterruptionMatchesAnUninterruptedRun) {
  REQUIRE_FASHION();
  TempDir dir;
  const std::string common =
      "train fashion-mnist --model mlp --limit-train 640 --limit-test 500 --epochs 2 --seed 7 ";
  Result full = run_ember(common + "--out " + (dir / "full"));
  ASSERT_EQ(full.status, 0) << full.output;

  Result cut = run_ember(common + "--interrupt-after 13 --out " + (dir / "cut"));
  EXPECT_EQ(cut.status, 130) << cut.output;
  EXPECT_TRUE(fs::exists(dir / "cut/checkpoints/interrupted.safetensors"));
  const json c = read_json(dir / "cut/summary.json");
  EXPECT_EQ(c["status"], "interrupted");
  EXPECT_GT(c["train_samples_per_second"].get<double>(), 0.0) << c.dump();

  Result resumed = run_ember(common + "--resume --out " + (dir / "cut"));
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  const json a = read_json(dir / "full/summary.json"), b = read_json(dir / "cut/summary.json");
  EXPECT_EQ(b["status"], "completed");
  EXPECT_EQ(b["epochs"], 2);
  EXPECT_EQ(b["steps"], a["steps"]);
  ASSERT_EQ(b["history"].size(), 2u);
  // The weights after each epoch are the same, so are the test metrics. (The resumed epoch's
  // train_loss covers only the batches run after the resume, so it is not compared.)
  for (int e = 0; e < 2; ++e)
    for (const char* m : {"valid_loss", "valid_accuracy"})
      EXPECT_EQ(a["history"][e][m].get<double>(), b["history"][e][m].get<double>())
          << "epoch " << e << " " << m;
  EXPECT_EQ(a["history"][0]["train_loss"].get<double>(),
            b["history"][0]["train_loss"].get<double>());

  // Interrupted in the first epoch: the checkpoint folder exists already, so nothing is lost.
  Result early = run_ember(common + "--interrupt-after 3 --out " + (dir / "early"));
  EXPECT_EQ(early.status, 130) << early.output;
  EXPECT_TRUE(fs::exists(dir / "early/checkpoints/interrupted.safetensors")) << early.output;
  // The rate is that of the 3 x 64 samples that ran (no epoch completed: it read 0.0).
  const json e = read_json(dir / "early/summary.json");
  EXPECT_EQ(e["status"], "interrupted");
  EXPECT_GT(e["train_samples_per_second"].get<double>(), 0.0) << e.dump();
  EXPECT_EQ(early.output.find(" 0.0 training samples/s"), std::string::npos) << early.output;

  // Resuming another model's run is an error naming it.
  Result other =
      run_ember("train fashion-mnist --model cnn --limit-train 640 --epochs 2 --resume --out " +
                (dir / "cut"));
  EXPECT_EQ(other.status, 1) << other.output;
  EXPECT_NE(other.output.find("cannot load into Cnn"), std::string::npos) << other.output;

  // --resume without a checkpoint is an error.
  Result none = run_ember(common + "--resume --out " + (dir / "empty"));
  EXPECT_EQ(none.status, 1) << none.output;
  EXPECT_EQ(none.output.rfind("error: ", 0), 0u) << none.output;
}

TEST(CliTestTrain, BatchLargerThanTheSetIsTheWholeSet) {
  REQUIRE_FASHION();
  TempDir dir;
  // As torch's DataLoader(batch_size=2**63 - 1): one batch. The loader's arithmetic overflowed.
  Result r = run_ember(
      "train fashion-mnist --model mlp --limit-train 100 --limit-test 50 --epochs 1 "
      "--batch-size 9223372036854775807 --out " +
      (dir / "run"));
  ASSERT_EQ(r.status, 0) << r.output;
  const json s = read_json(dir / "run/summary.json");
  EXPECT_EQ(s["steps"], 1);
  EXPECT_EQ(s["batch_size"], 9223372036854775807LL);
  Result e = run_ember("eval --batch-size 9223372036854775807 --checkpoint " +
                       (dir / "run/model.safetensors"));
  EXPECT_EQ(e.status, 0) << e.output;
  EXPECT_NE(e.output.find("(10000 test images)"), std::string::npos) << e.output;
}

// --resume keeps the checkpoint's learning rate (torch's optimizer.load_state_dict) unless --lr
// is given; what is reported is what ran.
TEST(CliTestTrain, ResumeKeepsTheCheckpointsLearningRateUnlessLrIsGiven) {
  REQUIRE_FASHION();
  TempDir dir;
  const std::string common = "train fashion-mnist --model mlp --limit-train 320 --limit-test 100 ";
  Result r = run_ember(common + "--epochs 1 --lr 0.01 --out " + (dir / "a"));
  ASSERT_EQ(r.status, 0) << r.output;
  fs::copy(dir / "a", dir / "b", fs::copy_options::recursive);
  auto epoch_lrs = [&](const std::string& run) {
    std::ifstream f(dir / (run + "/summary.json"));
    const nlohmann::json s = nlohmann::json::parse(f);
    std::vector<double> lrs;
    for (const auto& e : s["history"]) lrs.push_back(e["lr"].get<double>());
    return std::make_pair(s["lr"].get<double>(), lrs);
  };
  Result kept = run_ember(common + "--epochs 2 --resume --out " + (dir / "a"));
  ASSERT_EQ(kept.status, 0) << kept.output;
  EXPECT_NE(kept.output.find("Adam lr 0.01,"), std::string::npos) << kept.output;
  EXPECT_EQ(epoch_lrs("a"), std::make_pair(0.01, std::vector<double>{0.01, 0.01}));
  Result changed = run_ember(common + "--epochs 2 --resume --lr 0.5 --out " + (dir / "b"));
  ASSERT_EQ(changed.status, 0) << changed.output;
  EXPECT_NE(changed.output.find("Adam lr 0.5,"), std::string::npos) << changed.output;
  EXPECT_EQ(epoch_lrs("b"), std::make_pair(0.5, std::vector<double>{0.01, 0.5}));
}

TEST(CliTestTrain, ResumingACopiedRunFolderLeavesTheOriginalAlone) {
  REQUIRE_FASHION();
  TempDir dir;
  const std::string common =
      "train fashion-mnist --model mlp --limit-train 320 --limit-test 100 --seed 3 ";
  Result r = run_ember(common + "--epochs 2 --out " + (dir / "a"));
  ASSERT_EQ(r.status, 0) << r.output;
  const std::vector<std::string> names = {"epoch-0001.safetensors", "epoch-0002.safetensors"};
  std::vector<std::string> bytes;
  for (const auto& n : names) {
    std::ifstream f(dir / ("a/checkpoints/" + n), std::ios::binary);
    bytes.emplace_back((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    ASSERT_FALSE(bytes.back().empty()) << n;
  }
  fs::copy(dir / "a", dir / "b", fs::copy_options::recursive);
  // Resuming the copy for two more epochs rotated the original's epoch-0001 and epoch-0002 out.
  Result b = run_ember(common + "--epochs 4 --resume --out " + (dir / "b"));
  ASSERT_EQ(b.status, 0) << b.output;
  for (size_t i = 0; i < names.size(); ++i) {
    std::ifstream f(dir / ("a/checkpoints/" + names[i]), std::ios::binary);
    const std::string now((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_EQ(now, bytes[i]) << names[i];
  }
  EXPECT_FALSE(fs::exists(dir / "b/checkpoints/epoch-0001.safetensors"));
  EXPECT_TRUE(fs::exists(dir / "b/checkpoints/epoch-0004.safetensors"));

  // A checkpoint with a negative epoch is refused, naming the file and the field (it resumed
  // into epochs labelled -2..2).
  fs::copy(dir / "a", dir / "c", fs::copy_options::recursive);
  const std::string ck = dir / "c/checkpoints/epoch-0002.safetensors";
  ember::record::SafetensorsFile f = ember::record::load_safetensors(ck);
  f.metadata["epoch"] = "-3";
  ember::record::save_safetensors(ck, f.tensors, f.metadata);
  Result neg = run_ember(common + "--epochs 4 --resume --out " + (dir / "c"));
  EXPECT_EQ(neg.status, 1) << neg.output;
  EXPECT_EQ(neg.output.rfind("error: [load_checkpoint] " + ck +
                                 ": field 'epoch' = \"-3\" is not a non-negative integer",
                             0),
            0u)
      << neg.output;
}

// --limit-train / --limit-test: only those images are converted to f32 (all 60,000 were). The
// fusion log shows the normalisation's graph, and so its shape.
TEST(CliTestTrain, LimitsConvertOnlyTheImagesUsed) {
  REQUIRE_FASHION();
  TempDir dir;
  Result r = run_ember(
      "train fashion-mnist --model mlp --limit-train 64 --limit-test 32 --epochs 1 --out " +
          (dir / "run"),
      "EMBER_FUSION_LOG=1");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("  shape [64, 28, 28], 1 inputs, 1 outputs\n"), std::string::npos)
      << r.output.substr(0, 2000);
  EXPECT_NE(r.output.find("  shape [32, 28, 28], 1 inputs, 1 outputs\n"), std::string::npos)
      << r.output.substr(0, 2000);
  EXPECT_EQ(r.output.find("shape [60000, 28, 28]"), std::string::npos) << r.output.substr(0, 2000);
  EXPECT_EQ(r.output.find("shape [10000, 28, 28]"), std::string::npos) << r.output.substr(0, 2000);
  const json s = read_json(dir / "run/summary.json");
  EXPECT_EQ(s["train_samples"], 64);
  EXPECT_EQ(s["test_samples"], 32);
}

// --precision: recorded in the summary, the status line and the report; --resume keeps the
// checkpoint's, and refuses another one; a bad value is a usage error.
TEST(CliTestTrain, PrecisionIsRecordedAndKeptOnResume) {
  REQUIRE_FASHION();
  TempDir dir;
  Result bad = run_ember("train fashion-mnist --precision fp16");
  EXPECT_EQ(bad.status, 2) << bad.output;
  EXPECT_EQ(bad.output.rfind("error: --precision: fp16 not in {f32,bf16,f16}", 0), 0u)
      << bad.output;

  const std::string common = "train fashion-mnist --model mlp --limit-train 320 --limit-test 100 ";
  Result r = run_ember(common + "--epochs 1 --precision f16 --out " + (dir / "a"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find(", precision f16, output "), std::string::npos) << r.output;
  json s = read_json(dir / "a/summary.json");
  EXPECT_EQ(s["precision"], "f16");
  EXPECT_EQ(s["history"][0]["grad_scale"], 65536.0) << s.dump();
  EXPECT_EQ(s["history"][0]["skipped_steps"], 0.0) << s.dump();
  std::ifstream html(dir / "a/report.html");
  const std::string report((std::istreambuf_iterator<char>(html)), {});
  EXPECT_NE(report.find("<td>mixed float16 (float32 weights)</td>"), std::string::npos);

  Result kept = run_ember(common + "--epochs 2 --resume --out " + (dir / "a"));
  ASSERT_EQ(kept.status, 0) << kept.output;
  EXPECT_NE(kept.output.find(", precision f16, output "), std::string::npos) << kept.output;
  s = read_json(dir / "a/summary.json");
  EXPECT_EQ(s["precision"], "f16");
  EXPECT_EQ(s["epochs"], 2);
  EXPECT_LT(s["history"][1]["train_loss"].get<double>(), 2.0);  // below chance, ln 10

  Result other = run_ember(common + "--epochs 3 --resume --precision bf16 --out " + (dir / "a"));
  EXPECT_EQ(other.status, 1) << other.output;
  EXPECT_NE(other.output.find("trained with precision f16, this Learner's is bf16"),
            std::string::npos)
      << other.output;

  Result b = run_ember(common + "--epochs 1 --precision bf16 --out " + (dir / "b"));
  ASSERT_EQ(b.status, 0) << b.output;
  EXPECT_EQ(read_json(dir / "b/summary.json")["precision"], "bf16");
  EXPECT_EQ(read_json(dir / "b/summary.json")["history"][0].count("grad_scale"), 0u);
}
