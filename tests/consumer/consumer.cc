// Uses only the installed public headers and library.
#include <acan/space.h>

#include <cstdio>

int main() {
  auto space = acan::OpenSpace("mem:");
  if (!space.ok()) {
    std::fprintf(stderr, "consumer: %s\n", space.status().ToString().c_str());
    return 1;
  }
  if (auto s = (*space)->Put("hello.world", acan::Value::FromString("hi")); !s.ok()) return 1;
  auto t = (*space)->Get("hello.*", acan::Deadline::Now());
  if (!t.ok() || t->value.AsString() != "hi") return 1;
  std::printf("consumer: find_package(acan) works; took %s = %s\n", t->key.str().c_str(),
              std::string(t->value.AsString()).c_str());
  return 0;
}
