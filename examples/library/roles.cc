// A job run as separate roles, the units a multi-process deployment runs as processes: one
// manager and N handlers, each on its own thread, meeting only through a named in-process space.
// With window 1 the weights are bitwise those of acan::Train on the same job.
//   roles JOB.toml [HANDLERS]
#include <acan/acan.h>

#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s JOB.toml [HANDLERS]\n", argv[0]);
    return 2;
  }
  auto job = acan::ParseJobFile(argv[1]);
  if (!job.ok()) {
    std::fprintf(stderr, "roles: %s\n", job.status().ToString().c_str());
    return 2;
  }
  const int handlers = argc == 3 ? std::atoi(argv[2]) : 3;
  const std::string space = "mem:?name=roles-example";
  auto keep = acan::OpenSpace(space);  // the named space lives while one handle is open
  if (!keep.ok()) return 1;

  std::vector<std::thread> threads;
  std::vector<int64_t> tasks(handlers, 0);
  for (int h = 0; h < handlers; ++h) {
    threads.emplace_back([&, h] {
      acan::HandlerOptions o;
      o.id = h;
      auto r = acan::RunHandler(space, "roles", o);  // returns when the job is finished
      if (r.ok()) tasks[h] = r->tasks;
    });
  }
  acan::ManagerOptions mo;
  mo.job_id = "roles";
  mo.handlers = handlers;
  auto manager = acan::RunManager(space, *job, mo);
  for (auto& t : threads) t.join();
  if (!manager.ok() || !manager->model) {
    std::fprintf(stderr, "roles: %s\n", manager.status().ToString().c_str());
    return 1;
  }
  for (int h = 0; h < handlers; ++h) {
    std::printf("handler %d ran %lld tasks\n", h, static_cast<long long>(tasks[h]));
  }
  auto trained = acan::Train(*job);
  if (!trained.ok()) return 1;
  const bool same = manager->model->Sha256() == trained->model.Sha256();
  std::printf("%lld steps by separate roles, weights %s; acan::Train's: %s\n",
              static_cast<long long>(manager->progress.step),
              manager->model->Sha256().substr(0, 16).c_str(),
              same ? "bitwise the same" : "DIFFERENT");
  return job->runtime.window > 1 || same ? 0 : 1;
}
