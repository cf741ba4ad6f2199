// Helper of bench/fashion_compare.sh: writes what PyTorch needs to run exactly acan's job.
//   fashion_export CONFIG OUT_DIR [--train]
// OUT_DIR/init.safetensors  the job's initial model (InitialModel, i.e. model.init and train.seed)
// OUT_DIR/order.bin         int32 little-endian, train.epochs x rows: each epoch's row order as
//                           the Batcher takes it (data.shuffle seeded by train.seed and the epoch)
// With --train it also trains the job with the single-threaded reference trainer and prints the
// test figures after each epoch (used to tune examples/fashion-mnist.toml).
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "nn/dataset.h"
#include "nn/evaluate.h"
#include "nn/model.h"
#include "nn/trainer.h"

namespace {

int Fail(const acan::Status& s) {
  std::fprintf(stderr, "fashion_export: %s\n", s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace acan;
  if (argc < 3 || (argc == 4 && std::string(argv[3]) != "--train") || argc > 4) {
    std::fprintf(stderr, "usage: fashion_export CONFIG OUT_DIR [--train]\n");
    return 2;
  }
  const std::string out = argv[2];
  const bool train = argc == 4;
  auto job = ParseJobFile(argv[1]);
  if (!job.ok()) return Fail(job.status());
  auto data = nn::LoadDataset(*job);
  if (!data.ok()) return Fail(data.status());
  auto init = nn::InitialModel(*job);
  if (!init.ok()) return Fail(init.status());
  if (Status s = nn::SaveModel(out + "/init.safetensors", *init); !s.ok()) return Fail(s);
  nn::Batcher batcher(&*data, job->train.batch, job->data.shuffle, job->train.seed);
  std::ofstream order(out + "/order.bin", std::ios::binary);
  for (int64_t e = 0; e < job->train.epochs; ++e) {
    for (int64_t row : batcher.EpochOrder(e)) {
      const int32_t v = static_cast<int32_t>(row);  // little-endian on every machine we run on
      order.write(reinterpret_cast<const char*>(&v), sizeof(v));
    }
  }
  if (!order.flush()) return Fail(Status::Unavailable("cannot write " + out + "/order.bin"));
  std::printf("wrote %s/init.safetensors and %s/order.bin (%lld epochs x %lld rows)\n", out.c_str(),
              out.c_str(), (long long)job->train.epochs, (long long)data->rows);
  if (!train) return 0;

  auto test = nn::LoadTestDataset(*job, *data);
  if (!test.ok()) return Fail(test.status());
  auto trainer = nn::ReferenceTrainer::Create(*job, *init, *data);
  if (!trainer.ok()) return Fail(trainer.status());
  const auto start = std::chrono::steady_clock::now();
  for (int64_t e = 0; e < job->train.epochs; ++e) {
    auto r = (*trainer)->Epoch();
    if (!r.ok()) return Fail(r.status());
    std::printf("epoch %lld  train_loss %.5f  train_accuracy %.4f  %.1f s", (long long)e + 1,
                r->loss, r->accuracy,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (*test) {
      auto ev = nn::Evaluate((*trainer)->CurrentModel(), **test, *job);
      if (!ev.ok()) return Fail(ev.status());
      std::printf("  test_loss %.5f  test_accuracy %.4f", ev->loss, ev->accuracy);
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  return 0;
}
