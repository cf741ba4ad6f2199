// What the public roles (acan/worker.h: handler_role.cc, manager_role.cc) share: the job's key
// layout from its id, and the account of what a role's process moved through the space. Free
// functions with no state of their own; safe from any thread.
#pragma once

#include <string>
#include <string_view>

#include "acan/space.h"
#include "acan/status.h"
#include "runtime/core/layout.h"

namespace acan::internal {

// The key layout of job `job_id`; InvalidArgument naming the id when it is not a valid token.
Result<runtime::Layout> JobLayout(std::string_view job_id);

// What this process moved through the space, for the supervisor's account of the run's traffic
// (<job>.usage.<process>: value bytes put, value bytes returned, calls).
void PutUsage(Space& space, const runtime::Layout& layout, const std::string& process);

}  // namespace acan::internal
