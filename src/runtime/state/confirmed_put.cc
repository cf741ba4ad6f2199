#include "runtime/state/confirmed_put.h"

#include <fmt/format.h>

#include <cstring>
#include <thread>

namespace acan::runtime {

namespace {
bool SameBytes(const Value& a, const Value& b) {
  return a.size() == b.size() &&
         (a.data() == b.data() || a.size() == 0 || std::memcmp(a.data(), b.data(), a.size()) == 0);
}
}  // namespace

// The space has no blocking read (Get takes), so the wait polls; it is only ever entered when the
// put did not land at once.
Status PutConfirmed(Space* space, const Key& key, const Value& value, int attempts) {
  if (space->AcknowledgesPuts()) return space->Put(key, value);
  std::chrono::milliseconds wait{1};
  for (int attempt = 1; attempt <= attempts; ++attempt, wait *= 2) {
    ACAN_RETURN_IF_ERROR(space->Put(key, value));
    const auto until = Clock::now() + wait;
    for (auto poll = std::chrono::microseconds(50);; poll *= 2) {
      // This put's bytes, not any tuple of the key: the state tuple's predecessor is still there.
      ACAN_ASSIGN_OR_RETURN(auto back, space->ReadAll(key));
      for (const Tuple& t : back) {
        if (SameBytes(t.value, value)) return Status::Ok();
      }
      if (Clock::now() >= until) break;
      std::this_thread::sleep_for(std::min<Clock::duration>(poll, until - Clock::now()));
    }
  }
  return Status::DataLoss(fmt::format("'{}' was put {} times and never appeared in the space {}",
                                      key.str(), attempts, space->uri()));
}

}  // namespace acan::runtime
