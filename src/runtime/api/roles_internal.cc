// What the public roles share (roles_internal.h), and JobSpaceOptions (acan/worker.h): the
// options every client of a job's space opens it with.
#include "runtime/api/roles_internal.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <vector>

#include "acan/key.h"
#include "acan/worker.h"

namespace {
// spdlog's registry (a function-local static of libspdlog) made while the program is still one
// thread, for RunJob, RunManager and RunHandler alike: threads that log first at once would
// otherwise all make it, which ThreadSanitizer cannot see synchronised inside the uninstrumented
// library (ApiTest.StopTokensEndTheRolesEarly under TSan).
[[maybe_unused]] const spdlog::logger* const kLoggerAtLoad = spdlog::default_logger_raw();
}  // namespace

namespace acan {
namespace internal {

Result<runtime::Layout> JobLayout(std::string_view job_id) {
  auto token = Key::Parse(job_id);
  if (!token.ok()) {
    return Status::InvalidArgument(
        fmt::format("job id '{}': {}", job_id, token.status().message()));
  }
  return runtime::Layout(token->str());
}

void PutUsage(Space& space, const runtime::Layout& layout, const std::string& process) {
  const SpaceStats stats = space.Stats();
  int64_t calls = 0;
  for (uint64_t n : stats.calls) calls += static_cast<int64_t>(n);
  (void)space.Put(layout.Usage(process),
                  Value::FromVector(std::vector<int64_t>{int64_t(stats.bytes_put),
                                                         int64_t(stats.bytes_returned), calls}));
}

}  // namespace internal

Result<SpaceOptions> JobSpaceOptions(std::string_view job_id) {
  ACAN_ASSIGN_OR_RETURN(runtime::Layout layout, internal::JobLayout(job_id));
  SpaceOptions options;
  options.fenced = layout.FencedKeys();
  return options;
}

}  // namespace acan
