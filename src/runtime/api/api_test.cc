// The public API (acan/train.h, acan/model.h, acan/worker.h) against the single-threaded
// reference trainer: Train and a manager with handlers run as separate roles give bitwise its
// weights at window 1; models survive a safetensors round trip; bad input is a clear error.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "acan/acan.h"
#include "nn/model.h"
#include "nn/plan.h"
#include "nn/trainer.h"
#include "obs/http_server.h"
#include "runtime/audit/audit.h"
#include "runtime/core/budget.h"
#include "runtime/core/layout.h"
#include "runtime/core/summary.h"
#include "runtime/state/local_inputs.h"
#include "runtime/state/version_store.h"
#include "space/space_wrapper.h"

namespace acan {
namespace {

// The note's feasibility job (examples/feasibility.toml), smaller: `samples` rows, 3 handlers.
JobConfig Feasibility(int64_t samples = 40) {
  auto job = ParseJobFile(ACAN_EXAMPLES_DIR "/feasibility.toml");
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  job->data.samples = samples;
  job->runtime.handlers = 3;
  return *job;
}

// The reference trainer's model for a job, and its weights' hash: an independent oracle.
nn::Model ReferenceModel(const JobConfig& job) {
  nn::Model init = *nn::InitialModel(job);
  nn::Dataset data = *nn::LoadDataset(job);
  auto trainer = nn::ReferenceTrainer::Create(job, init, data);
  EXPECT_TRUE(trainer.ok()) << trainer.status().ToString();
  EXPECT_TRUE((*trainer)->Train().ok());
  return (*trainer)->CurrentModel();
}
std::string ReferenceSha(const JobConfig& job) { return nn::ModelSha256(ReferenceModel(job)); }

// A fresh directory, removed when the test's TempDir goes out of scope.
struct TempDir {
  explicit TempDir(const std::string& name)
      : path((std::filesystem::temp_directory_path() /
              ("acan_api_test_" + name + "_" + std::to_string(::getpid())))
                 .string()) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  const std::string path;
};

TEST(ApiTest, TrainGivesTheReferenceWeightsAndReportsEveryEpoch) {
  const JobConfig job = Feasibility();
  std::vector<EpochReport> epochs;
  int64_t progress_calls = 0, last_step = 0;
  TrainPlan plan;
  TrainOptions o;
  o.on_start = [&](const TrainPlan& p) { plan = p; };
  o.on_progress = [&](const TrainProgress& p) {
    ++progress_calls;
    EXPECT_EQ(p.step, last_step + 1);  // after every step, in order
    last_step = p.step;
  };
  o.on_epoch = [&](const EpochReport& e) { epochs.push_back(e); };
  auto r = Train(job, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->model.Sha256(), ReferenceSha(job));
  EXPECT_EQ(plan.samples, 40);
  EXPECT_EQ(plan.handlers, 3);
  EXPECT_EQ(plan.total_steps, 80);
  EXPECT_EQ(progress_calls, 80);
  EXPECT_TRUE(r->progress.finished);
  EXPECT_EQ(r->progress.step, 80);
  ASSERT_EQ(epochs.size(), 2u);
  EXPECT_EQ(epochs[0].epoch, 1);
  EXPECT_LT(epochs[1].train_loss, epochs[0].train_loss);
  EXPECT_FALSE(epochs[0].test_loss.has_value());  // the job has no test split
  EXPECT_LT(r->final_loss, r->initial_loss);
  EXPECT_EQ(r->handlers.size(), 3u);
  // The summary is summary.json: the same weights hash, the same counts.
  auto summary = nlohmann::json::parse(r->summary_json);
  EXPECT_EQ(summary["weights_sha256"], r->model.Sha256());
  EXPECT_EQ(summary["tasks"]["completed"].get<int64_t>(), r->progress.tasks_completed);

  const TempDir temp("artefacts");
  const std::string& dir = temp.path;
  ASSERT_TRUE(WriteArtefacts(dir, *r).ok());
  auto saved = LoadModel(dir + "/model.safetensors");
  ASSERT_TRUE(saved.ok()) << saved.status().ToString();
  EXPECT_EQ(saved->Sha256(), r->model.Sha256());
  EXPECT_TRUE(std::filesystem::exists(dir + "/summary.json"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/metrics.csv"));
  std::filesystem::remove_all(dir);
}

// Monitoring on: /metrics and the dashboard's data answer while the job trains (asked from the
// manager's thread, as a scraper would at any moment), and the weights are the reference's still.
TEST(ApiTest, MetricsAndTheDashboardAnswerWhileItTrainsAndChangeNothing) {
  JobConfig job = Feasibility(40);
  TrainOptions o;
  o.handlers = 2;
  o.metrics_port = 0;
  o.dashboard_port = 0;
  TrainPlan plan;
  o.on_start = [&](const TrainPlan& p) { plan = p; };
  std::string metrics, page;
  o.on_epoch = [&](const EpochReport& e) {
    if (e.epoch != 1) return;
    auto get = [](const std::string& url) {
      const size_t slash = url.find('/', std::string("http://").size());
      httplib::Client client(url.substr(0, slash));
      auto r = client.Get(url.substr(slash));
      return r && r->status == 200 ? r->body : std::string();
    };
    metrics = get(plan.metrics_url);
    page = get(plan.dashboard_url + "api/run");
  };
  auto r = Train(job, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->model.Sha256(), ReferenceSha(job));
  EXPECT_TRUE(plan.metrics_url.starts_with("http://127.0.0.1:")) << plan.metrics_url;
  EXPECT_TRUE(plan.metrics_url.ends_with("/metrics")) << plan.metrics_url;
  EXPECT_NE(metrics.find("acan_up{job=\"job\",role=\"trainer\"} 1\n"), std::string::npos)
      << metrics;
  auto data = nlohmann::json::parse(page, nullptr, false);
  ASSERT_TRUE(data.is_object()) << page;
  EXPECT_TRUE(data["rows"].is_array());
  EXPECT_EQ(data["epochs"].size(), 1u);
  // Ports that cannot be bound are refused before training.
  TrainOptions taken;
  taken.metrics_port = 0;
  taken.dashboard_port = 0;
  obs::HttpServer squatter;
  ASSERT_TRUE(squatter.Start(0).ok());
  taken.metrics_port = squatter.port();
  EXPECT_EQ(Train(job, taken).status().code(), StatusCode::kInvalidArgument);
}

// summary.json as a run wrote it, read back through its schema (runtime/core/summary.h): the
// text is the API's summary_json, and the figures are the run's.
TEST(ApiTest, TheSummaryReadsBackWithTheRunsFigures) {
  TrainOptions o;
  o.handlers = 2;
  auto r = Train(Feasibility(12), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const TempDir temp("summary");
  ASSERT_TRUE(WriteArtefacts(temp.path, *r).ok());
  auto s = runtime::ReadSummary(temp.path + "/summary.json");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->version, runtime::kSummaryVersion);
  EXPECT_EQ(runtime::SummaryText(*s), r->summary_json);
  EXPECT_EQ(s->weights_sha256, r->model.Sha256());
  EXPECT_EQ(s->strategy, "tiles");
  EXPECT_EQ(s->handlers, 2);
  EXPECT_EQ(s->steps, r->progress.step);
  EXPECT_EQ(s->total_steps, r->progress.total_steps);
  EXPECT_EQ(s->samples, r->progress.samples);
  EXPECT_EQ(s->tasks.completed, r->progress.tasks_completed);
  EXPECT_EQ(s->tasks.retransmitted, r->progress.tasks_retransmitted);
  EXPECT_EQ(s->updates.versions_applied, r->progress.versions_applied);
  EXPECT_EQ(s->initial_loss, r->initial_loss);
  EXPECT_EQ(s->final_loss, r->final_loss);
  EXPECT_EQ(s->wall_s, r->wall_s);
  EXPECT_EQ(s->train_s, r->train_s);
  ASSERT_TRUE(s->loss_per_epoch.has_value());
  ASSERT_EQ(s->loss_per_epoch->size(), r->epochs.size());
  for (size_t e = 0; e < r->epochs.size(); ++e) {
    EXPECT_EQ((*s->loss_per_epoch)[e], r->epochs[e].train_loss) << "epoch " << e + 1;
  }
  ASSERT_TRUE(s->per_handler.has_value());
  ASSERT_EQ(s->per_handler->size(), r->handlers.size());
  for (size_t h = 0; h < r->handlers.size(); ++h) {
    EXPECT_EQ((*s->per_handler)[h].tasks, r->handlers[h].tasks);
    EXPECT_EQ((*s->per_handler)[h].work, r->handlers[h].work);
  }
  // A regression without a test split: the figures it has not are null, not left out.
  ASSERT_TRUE(s->accuracy.has_value());
  EXPECT_FALSE(s->accuracy->has_value());
  ASSERT_TRUE(s->test_loss.has_value());
  EXPECT_FALSE(s->test_loss->has_value());
  EXPECT_FALSE(s->test_rows.has_value());
}

TEST(ApiTest, OptionsOverrideTheJobAndBadOnesAreRefused) {
  JobConfig job = Feasibility(12);
  TrainOptions o;
  o.handlers = 2;
  o.window = 2;
  auto r = Train(job, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->handlers.size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(r->summary_json)["window"], 2);
  o.job_id = "not a key";
  EXPECT_EQ(Train(job, o).status().code(), StatusCode::kInvalidArgument);
  o = {};
  o.space_uri = "nosuch:";
  EXPECT_EQ(Train(job, o).status().code(), StatusCode::kInvalidArgument);
  o = {};
  o.init_path = "/nonexistent/model.safetensors";
  EXPECT_FALSE(Train(job, o).ok());
  EXPECT_EQ(WriteArtefacts(TempDir("empty").path, TrainResult{}).code(),
            StatusCode::kInvalidArgument);
}

TEST(ApiTest, ModelsRoundTripAndNameWhatIsWrong) {
  const JobConfig job = Feasibility();
  auto init = Model::Initial(job);
  ASSERT_TRUE(init.ok()) << init.status().ToString();
  EXPECT_EQ(init->widths(), (std::vector<int64_t>{44, 44, 1}));
  ASSERT_EQ(init->tensors().size(), 4u);
  EXPECT_EQ(init->tensors()[0].name, "layers.0.weight");
  EXPECT_EQ(init->Find("layers.1.weight")->shape, (std::vector<int64_t>{1, 44}));
  EXPECT_EQ(init->NumParameters(), 44 * 44 + 44 + 44 + 1);
  EXPECT_EQ(init->Sha256(), nn::ModelSha256(*nn::InitialModel(job)));

  const TempDir temp("model");
  const std::string& dir = temp.path;
  ASSERT_TRUE(SaveModel(*init, dir + "/m.safetensors").ok());
  auto back = LoadModel(dir + "/m.safetensors");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->Sha256(), init->Sha256());
  EXPECT_EQ(back->widths(), init->widths());

  std::vector<ModelTensor> tensors = init->tensors();
  tensors.pop_back();  // layers.1.bias
  auto missing = Model::FromTensors(tensors, "mine");
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("layers.1.bias"), std::string::npos)
      << missing.status().message();
  tensors = init->tensors();
  tensors[0].values.pop_back();
  auto short_values = Model::FromTensors(tensors, "mine");
  EXPECT_NE(short_values.status().message().find("layers.0.weight"), std::string::npos);
  { std::ofstream(dir + "/junk.safetensors") << "not a model"; }
  auto junk = LoadModel(dir + "/junk.safetensors");
  EXPECT_FALSE(junk.ok());
  EXPECT_NE(junk.status().message().find("junk.safetensors"), std::string::npos);
  EXPECT_FALSE(SaveModel(Model(), dir + "/empty.safetensors").ok());
  EXPECT_FALSE(std::filesystem::exists(dir + "/empty.safetensors"));
  std::filesystem::remove_all(dir);
}

TEST(ApiTest, EvaluateMatchesTheTrainingFiguresAndChecksWidths) {
  const JobConfig job = Feasibility();
  auto r = Train(job);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto e = Evaluate(r->model, job);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->split, "train");  // no test split: the training set
  EXPECT_EQ(e->rows, 40);
  EXPECT_DOUBLE_EQ(e->loss, r->final_loss);
  EXPECT_FALSE(e->classification);
  JobConfig wider = job;
  wider.model.layers = {44, 10, 1};
  auto refused = Evaluate(r->model, wider);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("44, 10, 1"), std::string::npos);
}

// The roles on their own threads, meeting only through a named in-process space: the same
// weights as Train (and the reference), and every handler leaves when the job is done.
TEST(ApiTest, AManagerAndHandlersRunAsSeparateRolesGiveTheReferenceWeights) {
  const JobConfig job = Feasibility();
  const std::string uri = "mem:?name=api-test-roles";
  auto keep = OpenSpace(uri);  // the space lives as long as one handle does
  ASSERT_TRUE(keep.ok());
  std::vector<Result<HandlerReport>> handlers(3, Status::Internal("not run"));
  std::vector<std::thread> threads;
  for (int h = 0; h < 3; ++h) {
    threads.emplace_back([&, h] {
      HandlerOptions ho;
      ho.id = h;
      handlers[h] = RunHandler(uri, "roles", ho);
    });
  }
  ManagerOptions mo;
  mo.job_id = "roles";
  int64_t steps_seen = 0;
  mo.on_progress = [&](const TrainProgress& p) { steps_seen = p.step; };
  auto m = RunManager(uri, job, mo);
  for (auto& t : threads) t.join();
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE(m->job_finished);
  EXPECT_TRUE(m->was_active);
  EXPECT_TRUE(m->applied_last_step);
  EXPECT_EQ(steps_seen, 80);
  ASSERT_TRUE(m->model.has_value());
  EXPECT_EQ(m->model->Sha256(), ReferenceSha(job));
  int64_t tasks = 0;
  for (int h = 0; h < 3; ++h) {
    ASSERT_TRUE(handlers[h].ok()) << handlers[h].status().ToString();
    EXPECT_TRUE(handlers[h]->job_finished);
    EXPECT_EQ(handlers[h]->incarnation, 1);
    tasks += handlers[h]->tasks + handlers[h]->reused;
  }
  EXPECT_GE(tasks, m->progress.tasks_completed);
  // A second manager on the finished job finds it done, and so does a late handler.
  auto again = RunManager(uri, job, mo);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->job_finished);
  EXPECT_EQ(again->model->Sha256(), m->model->Sha256());
  HandlerOptions one;
  one.id = 1;
  auto late = RunHandler(uri, "roles", one);
  ASSERT_TRUE(late.ok());
  EXPECT_TRUE(late->job_finished);
  EXPECT_EQ(late->incarnation, 2);  // handler 1's second run
}

// Two managers started at once on a new job: both create it (identical duplicates), one holds the
// lease, the other stands by; the job finishes once, with the reference weights.
// Counts puts of a job's step inputs (<job>.t.x.* and <job>.t.t.*), the tensors made from the data.
class InputPutCounter final : public SpaceWrapper {
 public:
  explicit InputPutCounter(Space* inner) : SpaceWrapper(inner) {}
  using Space::Put;
  Status Put(Key key, Value value, Deadline deadline) override {
    if (key.token_count() > 3 && key.token(1) == "t" &&
        (key.token(2) == "x" || key.token(2) == "t")) {
      input_puts.fetch_add(1);
    }
    return SpaceWrapper::Put(std::move(key), std::move(value), deadline);
  }
  std::atomic<int64_t> input_puts{0};
};

// Handlers that read training rows from their own copy of the data: no step input crosses the
// space, and the weights are still bitwise the reference trainer's, for every strategy. The
// control run (inputs put by the manager) shows the counter sees them when they do.
TEST(ApiTest, HandlersMakingTheirInputsGiveTheReferenceWeightsWithNoInputInTheSpace) {
  for (Strategy strategy :
       {Strategy::kData, Strategy::kTiles, Strategy::kPipeline, Strategy::kChain}) {
    for (bool local : {true, false}) {
      JobConfig job = Feasibility(24);
      job.partition.strategy = strategy;
      job.partition.task_size = strategy == Strategy::kTiles ? 16 : 2;
      auto inner = OpenSpace("mem:");
      ASSERT_TRUE(inner.ok());
      InputPutCounter space(inner->get());
      std::vector<std::thread> threads;
      for (int h = 0; h < 2; ++h) {
        threads.emplace_back([&, h] {
          HandlerOptions ho;
          ho.id = h;
          auto r = RunHandler(space, "local", ho);
          EXPECT_TRUE(r.ok()) << r.status().ToString();
        });
      }
      ManagerOptions mo;
      mo.job_id = "local";
      mo.handlers_read_data = local;
      auto m = RunManager(space, job, mo);
      for (auto& t : threads) t.join();
      ASSERT_TRUE(m.ok()) << m.status().ToString();
      ASSERT_TRUE(m->model.has_value());
      const std::string what = std::string(ToString(strategy)) + (local ? " local" : " space");
      EXPECT_EQ(m->model->Sha256(), ReferenceSha(job)) << what;
      if (local) {
        EXPECT_EQ(space.input_puts.load(), 0) << what;
      } else {
        EXPECT_GT(space.input_puts.load(), 0) << what;
      }
    }
  }
}

// A classifier with a 512 x 512 layer, 64 rows in steps of 16, no handler budget in its file.
JobConfig WideClassifier() {
  JobConfig job = Feasibility(64);
  job.model.layers = {64, 512, 512, 10};
  job.model.loss = LossKind::kSoftmaxCrossEntropy;
  job.model.activation = Activation::kRelu;
  job.train.epochs = 1;
  job.train.batch = 16;
  job.runtime.handler_memory.clear();
  return job;
}

// A handler started with a memory budget announces it before the job exists; the manager that
// then makes the job (whose file names no budget) cuts its tiles so that every task fits it:
// at the edge the job would get otherwise, its largest task would not. Bitwise the reference.
TEST(ApiTest, AHandlerAnnouncesItsBudgetAndTheManagerCutsTheTilesToFitIt) {
  JobConfig job = WideClassifier();
  job.partition.task_size = 0;
  constexpr int64_t kBudget = 2 << 20;  // beside a handler's workspace, room for 0.5 MiB of task
  const int64_t kRoom = kBudget - runtime::WorkspaceBytes(kBudget);
  const int64_t free_edge = runtime::InitialTaskSize(job.model.layers, true, job.train.batch);
  ASSERT_GT(runtime::LargestTask(*nn::Plan::Create(job, free_edge, 64), 16).largest_bytes, kRoom)
      << "the job's own cut fits the budget already: the test proves nothing";

  auto space = OpenSpace("mem:");
  ASSERT_TRUE(space.ok());
  const runtime::Layout layout("budget");
  Result<HandlerReport> handled = Status::Internal("not run");
  std::thread handler([&] {
    HandlerOptions ho;
    ho.id = 0;
    ho.memory = kBudget;
    handled = RunHandler(**space, "budget", ho);
  });
  // The handler has announced itself before the manager starts.
  for (int i = 0; i < 500 && !*(*space)->Contains(layout.Alive(0)); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(*(*space)->Contains(layout.Alive(0))) << "the handler did not announce itself";
  ManagerOptions mo;
  mo.job_id = "budget";
  auto m = RunManager(**space, job, mo);
  handler.join();
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_TRUE(handled.ok()) << handled.status().ToString();
  EXPECT_GT(handled->tasks, 0);

  auto descriptor = (*space)->Read(layout.JobDescriptor());
  ASSERT_TRUE(descriptor.ok() && descriptor->has_value());
  auto d = runtime::DecodeJobDescriptor((*descriptor)->value);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  auto made = ParseJobString(d->job_toml, "the descriptor");
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  const int64_t edge = made->partition.task_size;
  EXPECT_LT(edge, free_edge);
  EXPECT_LE(runtime::LargestTask(*nn::Plan::Create(job, edge, 64), 16).largest_bytes, kRoom)
      << "tiles of " << edge;
  JobConfig at_edge = job;
  at_edge.partition.task_size = edge;
  ASSERT_TRUE(m->model.has_value());
  EXPECT_EQ(m->model->Sha256(), ReferenceSha(at_edge));
}

// Counts the reads of each key of one version of the job's state: `<job>.p.<shard>.v<version>`.
class VersionReads final : public SpaceWrapper {
 public:
  VersionReads(Space* inner, int64_t version)
      : SpaceWrapper(inner), suffix_(".v" + std::to_string(version)) {}
  using Space::Read;
  Result<std::optional<Tuple>> Read(const Pattern& p) override {
    const std::string& s = p.str();
    if (s.find(".p.") != std::string::npos && s.ends_with(suffix_)) {
      std::lock_guard<std::mutex> lock(mu);
      ++reads[s];
    }
    return SpaceWrapper::Read(p);
  }
  std::mutex mu;
  std::map<std::string, int> reads;

 private:
  std::string suffix_;
};

// A manager within a budget far smaller than a tile ends the job (the audit's final versions and
// model hash, the model file, the evaluation) reading each shard's last version once for the
// audit and once for the file, where bands of a few rows would read each tile once per band; the
// file is SaveModel's of the reference trainer's weights. One that can write no scratch file reads
// the rows from the space instead.
TEST(ApiTest, AManagerWithinABudgetEndsTheJobReadingEachShardTwice) {
  JobConfig job = WideClassifier();
  job.train.momentum = 0.9;
  job.partition.strategy = Strategy::kTiles;
  job.partition.task_size = 128;
  const int64_t steps = 64 / 16;
  ManagerOptions mo;
  mo.job_id = "ends";
  mo.memory = 256 << 10;  // bands of 8 rows of the 512-wide layer: a 128-row tile crosses 16
  ASSERT_EQ(runtime::ReadBandRows(*nn::Plan::Create(job, 128, 64), mo.memory), 8);
  TempDir dir("ends");
  mo.model_path = dir.path + "/model.safetensors";

  auto space = OpenSpace("mem:");
  ASSERT_TRUE(space.ok());
  VersionReads counted(space->get(), steps);
  std::vector<std::thread> threads;
  for (int h = 0; h < 2; ++h) {
    threads.emplace_back([&, h] {
      HandlerOptions ho;
      ho.id = h;
      EXPECT_TRUE(RunHandler(counted, "ends", ho).ok());
    });
  }
  auto m = RunManager(counted, job, mo);
  for (auto& t : threads) t.join();
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_TRUE(m->applied_last_step);
  const nn::Model reference = ReferenceModel(job);
  EXPECT_EQ(m->weights_sha256, nn::ModelSha256(reference));
  // The audit's end took the model's hash from its own scratch file: the reference's, the chain
  // whole.
  runtime::AuditVerifyOptions verify;
  verify.model_sha256 = m->weights_sha256;
  const runtime::AuditVerdict verdict = runtime::VerifyAuditLines(m->audit, verify);
  EXPECT_TRUE(verdict.ok) << "line " << verdict.line << ": " << verdict.problem;
  EXPECT_EQ(verdict.final_model_sha256, m->weights_sha256);
  ASSERT_TRUE(m->evaluation.has_value());

  // The file, byte for byte the reference trainer's model saved.
  const std::string want = dir.path + "/reference.safetensors";
  ASSERT_TRUE(nn::SaveModel(want, reference).ok());
  auto bytes = [](const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  EXPECT_EQ(bytes(mo.model_path), bytes(want));

  const nn::Plan plan = *nn::Plan::Create(job, 128, 64);
  const runtime::Layout layout("ends");
  {
    std::lock_guard<std::mutex> lock(counted.mu);
    for (const nn::ShardSpec& s : plan.shards()) {
      EXPECT_EQ(counted.reads[layout.State(s.key, steps).str()], 2) << s.key;
      EXPECT_EQ(counted.reads[layout.State(s.momentum_key, steps).str()], 1) << s.momentum_key;
    }
  }

  // A second manager finds the job finished; with no model path and no temporary folder it can
  // write to (nothing can be created in /proc), it reads the model's rows from the space instead
  // and reports the same hash and evaluation.
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string saved_tmpdir = tmpdir ? tmpdir : "";
  setenv("TMPDIR", "/proc", 1);
  ManagerOptions again = mo;
  again.model_path.clear();
  auto late = RunManager(counted, job, again);
  if (saved_tmpdir.empty()) {
    unsetenv("TMPDIR");
  } else {
    setenv("TMPDIR", saved_tmpdir.c_str(), 1);
  }
  ASSERT_TRUE(late.ok()) << late.status().ToString();
  EXPECT_TRUE(late->job_finished);
  EXPECT_EQ(late->weights_sha256, m->weights_sha256);
  ASSERT_TRUE(late->evaluation.has_value());
  EXPECT_EQ(late->evaluation->accuracy, m->evaluation->accuracy);
  EXPECT_EQ(late->evaluation->loss, m->evaluation->loss);
}

// A handler whose copy of the data is not the manager's refuses to run, naming why.
TEST(ApiTest, AHandlerWithDifferentDataRefusesToJoin) {
  auto space = OpenSpace("mem:");
  ASSERT_TRUE(space.ok());
  const JobConfig job = Feasibility(24);
  ASSERT_TRUE((*space)
                  ->Put("other.m.job",
                        runtime::EncodeJobDescriptor({ToToml(job), true, std::string(64, '0')}))
                  .ok());
  auto r = RunHandler(**space, "other", HandlerOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << r.status().ToString();
  EXPECT_NE(r.status().message().find("differs from its manager's"), std::string::npos)
      << r.status().ToString();
  // One that announced a budget takes it back: a manager must not cut tiles for it.
  HandlerOptions budgeted;
  budgeted.id = 3;
  budgeted.memory = 1 << 20;
  auto b = RunHandler(**space, "other", budgeted);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kFailedPrecondition) << b.status().ToString();
  EXPECT_FALSE(*(*space)->Contains(runtime::Layout("other").Alive(3)))
      << "its announcement stayed behind";
}

TEST(ApiTest, TwoManagersStartedTogetherRunTheJobOnce) {
  const JobConfig job = Feasibility(20);
  const std::string uri = "mem:?name=api-test-two-managers";
  auto keep = OpenSpace(uri);
  ASSERT_TRUE(keep.ok());
  std::vector<Result<ManagerReport>> managers(2, Status::Internal("not run"));
  std::vector<std::thread> threads;
  for (int m = 0; m < 2; ++m) {
    threads.emplace_back([&, m] {
      ManagerOptions mo;
      mo.name = "manager-" + std::to_string(m);
      mo.lease = std::chrono::milliseconds(200);
      managers[m] = RunManager(uri, job, mo);
    });
  }
  for (int h = 0; h < 2; ++h) {
    threads.emplace_back([&, h] {
      HandlerOptions ho;
      ho.id = h;
      EXPECT_TRUE(RunHandler(uri, "job", ho).ok());
    });
  }
  for (auto& t : threads) t.join();
  const std::string reference = ReferenceSha(job);
  for (int m = 0; m < 2; ++m) {
    ASSERT_TRUE(managers[m].ok()) << managers[m].status().ToString();
    EXPECT_TRUE(managers[m]->job_finished);
    ASSERT_TRUE(managers[m]->model.has_value());
    EXPECT_EQ(managers[m]->model->Sha256(), reference);
  }
  EXPECT_TRUE(managers[0]->was_active || managers[1]->was_active);
  // One of them applied the last step (and would write the artefacts); the other found it done.
  EXPECT_NE(managers[0]->applied_last_step, managers[1]->applied_last_step);
}

TEST(ApiTest, StopTokensEndTheRolesEarly) {
  const JobConfig job = Feasibility();
  auto space = OpenSpace("mem:");
  ASSERT_TRUE(space.ok());
  // No handler: the manager never finishes a step; its stop token ends it, as if killed.
  std::stop_source stop_manager;
  ManagerOptions mo;
  mo.stop = stop_manager.get_token();
  Result<ManagerReport> m = Status::Internal("not run");
  std::thread manager([&] { m = RunManager(**space, job, mo); });
  // A handler with nothing to do, stopped before the job ends: it says it is leaving.
  std::stop_source stop_handler;
  stop_handler.request_stop();
  HandlerOptions ho;
  ho.id = 5;
  ho.stop = stop_handler.get_token();
  auto h = RunHandler(**space, "job", ho);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_FALSE(h->job_finished);
  EXPECT_TRUE((*space)->Read("job.done.restarted.h5")->has_value());
  EXPECT_FALSE((*space)->Read("job.alive.h5")->has_value());
  stop_manager.request_stop();
  manager.join();
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_FALSE(m->job_finished);
  EXPECT_FALSE(m->model.has_value());
  HandlerOptions bad;
  bad.task_types = {"forwards"};
  auto refused = RunHandler(**space, "job", bad);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("forwards"), std::string::npos);
  EXPECT_EQ(RunHandler(**space, "bad job", {}).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace acan
