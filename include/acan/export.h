// ACAN_EXPORT marks what libacan.so exports. The library is built with -fvisibility=hidden and
// -fvisibility-inlines-hidden, so only the declarations of the public headers under include/acan/
// that carry this mark are visible to a program that links it; everything in src/ stays internal
// (LevelDB's export.h). On ELF the same attribute serves the library and its users.
#pragma once

#define ACAN_EXPORT [[gnu::visibility("default")]]
