// Uses only the installed public headers and library: the space, and the feasibility job trained
// through acan::Train twice (its loss must fall within 2 epochs, and at window 1 both runs give
// bitwise the same weights), its model saved and loaded again bit for bit.
//   consumer FEASIBILITY.toml
#include <acan/acan.h>

#include <cstdio>
#include <filesystem>

int Fail(const char* what, const acan::Status& s) {
  std::fprintf(stderr, "consumer: %s: %s\n", what, s.ToString().c_str());
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s FEASIBILITY.toml\n", argv[0]);
    return 2;
  }
  auto space = acan::OpenSpace("mem:");
  if (!space.ok()) return Fail("OpenSpace", space.status());
  if (auto s = (*space)->Put("hello.world", acan::Value::FromString("hi")); !s.ok()) {
    return Fail("Put", s);
  }
  auto t = (*space)->Get("hello.*", acan::Deadline::Now());
  if (!t.ok() || t->value.AsString() != "hi") return Fail("Get", t.status());
  std::printf("consumer: find_package(acan) works; took %s = %s\n", t->key.str().c_str(),
              std::string(t->value.AsString()).c_str());

  auto job = acan::ParseJobFile(argv[1]);
  if (!job.ok()) return Fail("ParseJobFile", job.status());
  auto r = acan::Train(*job);
  if (!r.ok()) return Fail("Train", r.status());
  if (r->epochs.size() != 2 || !(r->epochs[1].train_loss < r->epochs[0].train_loss) ||
      !(r->final_loss < r->initial_loss)) {
    std::fprintf(stderr, "consumer: the loss did not fall within 2 epochs: %s\n",
                 r->summary_json.c_str());
    return 1;
  }
  // Window 1: the weights are the same whatever the timing (retransmissions included).
  auto again = acan::Train(*job);
  if (!again.ok()) return Fail("Train", again.status());
  if (again->model.Sha256() != r->model.Sha256()) {
    std::fprintf(stderr, "consumer: two runs of one job gave different weights\n");
    return 1;
  }
  const auto path = std::filesystem::temp_directory_path() / "acan_consumer_model.safetensors";
  if (auto s = acan::SaveModel(r->model, path.string()); !s.ok()) return Fail("SaveModel", s);
  auto back = acan::LoadModel(path.string());
  std::filesystem::remove(path);
  if (!back.ok()) return Fail("LoadModel", back.status());
  if (back->Sha256() != r->model.Sha256()) {
    std::fprintf(stderr, "consumer: the saved model differs from the trained one\n");
    return 1;
  }
  std::printf(
      "consumer: acan::Train on the feasibility job: loss per epoch %.5f, %.5f; %lld "
      "tasks; the same weights twice; model saved and loaded bit for bit\n",
      r->epochs[0].train_loss, r->epochs[1].train_loss,
      static_cast<long long>(r->progress.tasks_completed));
  return 0;
}
