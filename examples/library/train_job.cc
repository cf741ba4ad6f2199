// Trains the job of a TOML file with acan::Train, writes its artefacts, then loads the saved
// model again and evaluates it on the job's test split (or its training set).
//   train_job JOB.toml OUT_DIR
#include <acan/acan.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s JOB.toml OUT_DIR\n", argv[0]);
    return 2;
  }
  auto job = acan::ParseJobFile(argv[1]);
  if (!job.ok()) {
    std::fprintf(stderr, "train_job: %s\n", job.status().ToString().c_str());
    return 2;
  }
  acan::TrainOptions options;
  options.on_epoch = [](const acan::EpochReport& e) {
    std::printf("epoch %lld: training loss %.5f\n", static_cast<long long>(e.epoch), e.train_loss);
  };
  auto result = acan::Train(*job, options);
  if (!result.ok()) {
    std::fprintf(stderr, "train_job: %s\n", result.status().ToString().c_str());
    return 1;
  }
  std::printf("loss %.5f -> %.5f over %.2f s, %lld tasks, weights %s\n", result->initial_loss,
              result->final_loss, result->train_s,
              static_cast<long long>(result->progress.tasks_completed),
              result->model.Sha256().substr(0, 16).c_str());
  const std::string out = argv[2];
  if (acan::Status s = acan::WriteArtefacts(out, *result); !s.ok()) {
    std::fprintf(stderr, "train_job: %s\n", s.ToString().c_str());
    return 1;
  }
  auto saved = acan::LoadModel(out + "/model.safetensors");
  if (!saved.ok()) {
    std::fprintf(stderr, "train_job: %s\n", saved.status().ToString().c_str());
    return 1;
  }
  auto eval = acan::Evaluate(*saved, *job);
  if (!eval.ok()) {
    std::fprintf(stderr, "train_job: %s\n", eval.status().ToString().c_str());
    return 1;
  }
  std::printf("saved model on the %s split: loss %.5f over %lld rows%s\n", eval->split.c_str(),
              eval->loss, static_cast<long long>(eval->rows),
              saved->Sha256() == result->model.Sha256() ? ", bitwise the trained weights" : "");
  return saved->Sha256() == result->model.Sha256() && eval->loss == result->final_loss ? 0 : 1;
}
