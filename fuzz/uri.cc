// Space URIs (mem:, nats://host:port[,host:port...]?params, nats:local?...): parsing any text
// either succeeds or says why; nothing is opened.
#include <string_view>

#include "space/uri_internal.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto uri = acan::SpaceUri::Parse(text);
  if (uri.ok()) {
    acan::SpaceOptions options;
    (void)uri->ApplyOptions(&options);
    for (const char* name : {"request_ms", "replicas"}) (void)uri->UintParam(name, 7);
    (void)uri->RejectUnusedParams();
  }
  return 0;
}
