// The metrics mapping: one LiveSample (runtime/core/records.h) as Prometheus families in the text
// exposition format (obs/exposition.h), under the names docs/observability.md lists. Pure
// functions of the sample; LiveView (live_view.h) calls them at every scrape.
#pragma once

#include "obs/exposition.h"
#include "runtime/core/records.h"

namespace acan::runtime {

// The metrics of one sample (see docs/observability.md for the names): the job's (progress,
// controller, crashes; only where the sample has a progress, i.e. from a manager) and the
// process's (its handlers, task times, space calls).
void AppendMetrics(const LiveSample& s, obs::Exposition& e);
void AppendJobMetrics(const LiveSample& s, obs::Exposition& e);
void AppendProcessMetrics(const LiveSample& s, obs::Exposition& e);
void AppendSpaceMetrics(const LiveSample& s, obs::Exposition& e);

}  // namespace acan::runtime
