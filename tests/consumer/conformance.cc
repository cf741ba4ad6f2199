// The installed conformance suite (find_package(acan COMPONENTS testing)) against mem:, as a
// backend written outside the acan repository would run it against itself.
#include <acan/testing/space_conformance.h>

namespace acan::testing {  // the suite's own namespace: GoogleTest's macro takes its plain name
namespace {

struct MemFactory {
  static Result<std::unique_ptr<Space>> Open(const SpaceOptions& options) {
    return OpenSpace("mem:", options);
  }
};

INSTANTIATE_TYPED_TEST_SUITE_P(InstalledMem, SpaceConformance, MemFactory);

}  // namespace
}  // namespace acan::testing
