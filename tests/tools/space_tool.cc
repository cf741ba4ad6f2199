// space_tool URI COMMAND ...: one call on a space, for the end-to-end tests (a client with a
// role's credentials doing what the role must not). Commands:
//   put KEY TEXT         puts TEXT under KEY
//   swap-cell KEY TEXT   swaps cell KEY from revision 0 to TEXT
//   read PATTERN         prints the first matching tuple's key
// The space is opened as every process of job 'job' opens it (acan::JobSpaceOptions).
// Exit 0 on success; 3 and the status on stderr when the space refuses (PermissionDenied);
// 1 for any other failure; 2 for bad usage.
#include <cstdio>
#include <string>

#include "acan/space.h"
#include "acan/worker.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s URI put KEY TEXT | swap-cell KEY TEXT | read PATTERN\n",
                 argv[0]);
    return 2;
  }
  auto space = acan::OpenSpace(argv[1], acan::JobSpaceOptions("job").value());
  if (!space.ok()) {
    std::fprintf(stderr, "space_tool: %s\n", space.status().ToString().c_str());
    return 1;
  }
  const std::string command = argv[2];
  acan::Status s;
  if ((command == "put" || command == "swap-cell") && argc == 5) {
    auto key = acan::Key::Parse(argv[3]);
    if (!key.ok()) {
      std::fprintf(stderr, "space_tool: %s\n", key.status().ToString().c_str());
      return 2;
    }
    if (command == "put") {
      s = (*space)->Put(*key, acan::Value::FromString(argv[4]));
    } else {
      s = (*space)
              ->SwapCell(*key, acan::Value::FromString(argv[4]), 0, acan::Deadline::Now())
              .status();
    }
  } else if (command == "read" && argc == 4) {
    auto pattern = acan::Pattern::Parse(argv[3]);
    if (!pattern.ok()) return 2;
    auto t = (*space)->Read(*pattern);
    s = t.status();
    if (t.ok()) std::printf("%s\n", t->has_value() ? (*t)->key.str().c_str() : "(none)");
  } else {
    std::fprintf(stderr, "space_tool: unknown command or arguments\n");
    return 2;
  }
  if (!s.ok()) {
    std::fprintf(stderr, "space_tool: %s\n", s.ToString().c_str());
    return s.code() == acan::StatusCode::kPermissionDenied ? 3 : 1;
  }
  return 0;
}
