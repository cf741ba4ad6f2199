// A test hook for crash points across processes (tests/e2e/kill_points.sh): with
// ACAN_TEST_KILL_AT=<point>:<n> in its environment, a process that armed the hook kills itself
// with SIGKILL the n-th time it reaches <point>, as a real crash at that instruction would. A
// process that did not arm it never stops here, whatever its environment says. With
// ACAN_TEST_KILL_ONCE=<file> as well, only the first process to get there dies (it creates the
// file; a restarted process finds it and carries on). The points:
// "take" (a handler took a pouch), "claim" (it claimed a task), "kernel" (the task's kernel ran,
// nothing written yet), "output" (its outputs are in the space, its report is not), "done" (its
// report is in, its claim not yet removed), "chunk" (a value split into chunks has some stored,
// not all, and no tuple naming them), "fenced" (a fenced put, its fence checked, is about to be
// sent: a manager's version or state). With ACAN_TEST_STOP_AT=<point>:<n> instead, the process
// stops itself there with SIGSTOP (a pause at that instruction), and goes on when continued.
// Compiled in only with the build option ACAN_KILL_POINTS (on in builds with tests).
#pragma once

#include <string_view>

namespace acan {

#ifdef ACAN_KILL_POINTS
// Reads ACAN_TEST_KILL_AT and arms the hook when it names a point (a malformed value is ignored
// with a warning on stderr). Thread-safe; call once, before the points are reached.
void ArmKillPoints();
// Dies here when armed for `point` and this is its n-th visit. Costs a relaxed load otherwise.
void KillPoint(std::string_view point);
#else
// A build without -DACAN_KILL_POINTS=ON (an installed build): no crash point anywhere.
inline void ArmKillPoints() {}
inline void KillPoint(std::string_view) {}
#endif

}  // namespace acan
