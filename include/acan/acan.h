// acan: checkpoint-free, fault-tolerant, elastic neural-network training on a tuple space.
// The umbrella header: everything a program that links acan::acan may use (docs/library.md).
//
//   acan/status.h   Status and Result<T>
//   acan/clock.h    deadlines of blocking calls
//   acan/key.h      keys and patterns of the tuple space
//   acan/value.h    the immutable bytes of a tuple
//   acan/space.h    the tuple space, opened by URI ("mem:", "mem:?name=NAME"); backends register
//   acan/job.h      the job file (TOML) as a JobConfig
//   acan/model.h    models as named tensors, safetensors files, evaluation
//   acan/train.h    Train a job in this process; write its artefacts
//   acan/worker.h   RunHandler and RunManager: the roles of a job, for a process or thread each
#pragma once

#include "acan/clock.h"
#include "acan/export.h"
#include "acan/job.h"
#include "acan/key.h"
#include "acan/model.h"
#include "acan/space.h"
#include "acan/status.h"
#include "acan/train.h"
#include "acan/value.h"
#include "acan/worker.h"
