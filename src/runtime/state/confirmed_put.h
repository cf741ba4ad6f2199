// The writes the manager cannot afford to lose: a parameter or velocity version (the model's state
// has no other copy once its proposal is taken), its state tuple (the restart point), a step's
// marker (without it every output of the step is taken back). A space's put
// that reports OK has landed (DESIGN.md section 3), but a store that loses an acknowledged write,
// or lands it late, must cost time, never the job: the put is read back, and made again while it
// does not appear (docs/architecture.md, "Every tuple may be lost"). Extra copies of the same bytes
// are harmless: readers take any copy, and whoever removes such a key takes every copy. Over a
// space whose puts are acknowledged once stored (Space::AcknowledgesPuts: NATS JetStream) the
// acknowledgement is the confirmation, and nothing is read back.
#pragma once

#include "acan/space.h"

namespace acan::runtime {

// Puts `value` under `key` and waits until a tuple of the key with these bytes can be read; puts it
// again when it has not appeared within a wait that doubles from 1 ms, at most `attempts` times.
// DataLoss naming the key when it never appears; the space's own error when a put fails.
Status PutConfirmed(Space* space, const Key& key, const Value& value, int attempts = 10);

}  // namespace acan::runtime
