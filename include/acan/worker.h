// The roles of a job as units that a process (or a thread) runs on its own: RunHandler is a
// processor that takes the job's tasks from a space and runs them; RunManager generates the
// tasks, tracks their deadlines, sends lost ones again and applies every update exactly once. The
// space is the only channel between them, so handlers may join and leave at any time, and several
// managers may run: one holds the job's lease and the others stand by until it lapses.
//
// Each call blocks until the job is finished or its stop token fires, and may run on any thread;
// a Space given by reference must outlive the call. A handler keeps no state that the space does
// not also hold: stopping one costs at most the task in its hands, which the manager sends again.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "acan/export.h"
#include "acan/job.h"
#include "acan/model.h"
#include "acan/space.h"
#include "acan/status.h"
#include "acan/train.h"

namespace acan {

struct HandlerOptions {
  int id = 0;  // unique among the job's handlers; a restarted handler keeps its id
  // Task types it runs ("forward", "activation", "loss", "backward", "update"); empty: every type.
  std::vector<std::string> task_types;
  int pouch = 1;  // tasks taken at once
  // A slow processor (the experiments' speed factors): each task takes this many times its
  // kernel's time (the kernel runs at full speed, the rest is waited out). >= 1.
  double slowdown = 1.0;
  // A slow-down that changes while it runs (read before every task, values below 1 read as 1):
  // when set, it is used instead of `slowdown`. It must outlive the call.
  const std::atomic<double>* speed = nullptr;
  std::stop_token stop;  // leave: the task in hand is abandoned, the rest of the pouch put back
  std::chrono::milliseconds poll{50};  // how often an idle handler looks at the stop and the job
  // A job whose handlers make their inputs from their own copy of the data: keep that copy in
  // this directory, one file per data set, which every process of the host maps instead of
  // holding a copy each (the first to load the rows writes it; each checks its SHA-256). Empty:
  // the rows in this process's memory.
  std::string data_cache;
  // Serve this handler's Prometheus metrics at http://127.0.0.1:PORT/metrics while it runs (0: a
  // free port; -1: none); `on_serving` gets the URL once it listens.
  int metrics_port = -1;
  std::function<void(const std::string& url)> on_serving;
  // Once it has announced itself in the job's space, before its first take: the incarnation this
  // run of the handler is (from then on the manager knows it, and a stop is a clean leave).
  std::function<void(int64_t incarnation)> on_joined;
  // What it may hold of acan's data, in bytes (0: the job's [runtime] handler_memory for this id;
  // none when the job names none): a task whose inputs and outputs, with the data it makes its
  // inputs from, would pass it is refused with why (the manager sends it again), never run.
  int64_t memory = 0;
  // Once it has joined, before its first take: the budget it holds to (`memory`, or the job's;
  // 0: none), e.g. for the process to tune its allocator to it.
  std::function<void(int64_t memory)> on_budget;
};

struct HandlerReport {
  int id = 0;
  int64_t incarnation = 0;  // 1 for a handler id's first run, one more for each run after
  int64_t tasks = 0;        // tasks run to completion and reported
  int64_t work = 0;         // floats its tasks read and wrote
  double busy_s = 0;
  int64_t reused = 0;           // resent tasks whose outputs were in the space already
  int64_t missing_inputs = 0;   // tasks dropped because an input was gone (late duplicates)
  int64_t bad_tuples = 0;       // undecodable task tuples, dropped
  int64_t memory = 0;           // the budget it held to (0: none)
  int64_t peak_held_bytes = 0;  // the most it held for one task: inputs, outputs and data
  int64_t refused = 0;          // tasks it would not run: over its budget
  bool job_finished = false;    // false: it stopped on its token before the job ended
  double first_task_s = -1;     // from the call's start to its first completed task; -1: none
};

// The options every client of job `job_id`'s space opens it with (SpaceOptions::fenced: the
// parameter versions and the manager's state, put fenced by the manager's lease, so that a
// manager that lost its lease cannot land a write late). The functions below that take a URI
// use them; a Space given to the others must have been opened with them. InvalidArgument for a
// bad job id.
ACAN_EXPORT Result<SpaceOptions> JobSpaceOptions(std::string_view job_id);

// Runs handler `options.id` of job `job_id` until the job is finished or the stop token fires.
// InvalidArgument for a bad URI, job id or task type.
ACAN_EXPORT Result<HandlerReport> RunHandler(std::string_view space_uri, std::string_view job_id,
                                             const HandlerOptions& options = {});
ACAN_EXPORT Result<HandlerReport> RunHandler(Space& space, std::string_view job_id,
                                             const HandlerOptions& options = {});

struct ManagerOptions {
  std::string name = "manager";  // its name in the lease
  std::string job_id = "job";    // the token every key of the job starts with
  int handlers = 0;  // handlers expected (the first pouch's size); 0: the job's runtime.handlers
  std::chrono::milliseconds lease{1000};  // a standby takes over this long after a manager died
  // The initial model of a new job: `init_model` if set, else the file `init_path` if given,
  // else the job's model.init. A job already in the space resumes where it is.
  std::optional<Model> init_model;
  std::string init_path;
  std::stop_token stop;  // stop as if killed: the lease lapses and a standby takes over
  // A new job's handlers make each step's input rows from their own copy of the data (the same
  // files, checked by a SHA-256 of the rows) instead of reading them from the space: what a
  // network wants, since the space then carries parameters and gradients, not pixels. Fixed
  // when the job is made; the weights are bitwise the same either way.
  bool handlers_read_data = false;
  // The training rows through this row cache directory, as HandlerOptions::data_cache.
  std::string data_cache;
  // When set, the manager that finishes the job writes this metrics.csv: a row every half second
  // while it was active (throughput, task size, pouch, timeouts, each handler's tasks and work
  // from its done reports), as `acan train` writes for an in-process run.
  std::string metrics_csv;
  std::function<void(const TrainProgress&)> on_progress;  // after every step it applies
  std::function<void()> on_active;  // when it takes the lease and starts or resumes the job
  // Serve the manager's Prometheus metrics (the job's progress while it is active) at
  // http://127.0.0.1:PORT/metrics (0: a free port; -1: none); `on_serving` gets the URL.
  int metrics_port = -1;
  std::function<void(const std::string& url)> on_serving;
  // A secure deployment's manager key and certificate (its manager-key.pem and manager.pem):
  // every audit record this manager writes is signed with the key and carries the certificate,
  // so that `acan audit verify --ca` refuses a chain re-hashed by anyone else. Empty: unsigned.
  std::string audit_key_file;
  std::string audit_cert_file;
  // What it may hold of the job's data, in bytes (0: the job's [runtime] manager_memory, none
  // when that is 0 too). With a budget it never holds the whole model: it makes a new job's
  // initial model a row block at a time, and at the end hashes, writes and evaluates the trained
  // one a row block at a time too (ManagerReport::model stays empty).
  int64_t memory = 0;
  // Where the manager that finishes the job writes the trained model (safetensors; "": nowhere).
  std::string model_path;
};

struct ManagerReport {
  bool job_finished = false;       // false: it stopped on its token first
  bool was_active = false;         // it held the lease at some point
  bool applied_last_step = false;  // it finished the job (a standby may find it finished)
  // A chain job with task_size 0 over a network space: the grain the manager that made the job
  // chose (this one or another; steps 0 otherwise), and the two figures it came from
  // (runtime/manager/grain.h).
  struct Grain {
    int64_t steps = 0;   // mini-batches per task
    double step_ms = 0;  // one mini-batch's compute here
    double move_ms = 0;  // the model put and read once through the space
  } grain;
  // From when it last took the lease to the end: the training time, without loading the data or
  // waiting as a standby.
  double active_s = 0;
  // A tiles job cut in bands for handler budgets that differ: its bands as made (empty: none).
  std::vector<TileBand> tile_bands;
  TrainProgress progress;  // the job's, as stored in the space at the end
  // The trained model, when the job is finished and the manager has no memory budget.
  std::optional<Model> model;
  std::string weights_sha256;  // the trained model's (Model::Sha256), when the job is finished
  // Its evaluation (on the job's test split, else its training set) by a manager with a budget,
  // made a row block at a time; without one, evaluate `model`.
  std::optional<EvalResult> evaluation;
  // The job's audit log when it is finished: one JSON record a line, hash-chained (what `acan
  // audit verify` checks; docs/security.md).
  std::vector<std::string> audit;
};

// Runs a manager of `job` until the job is finished or the stop token fires: creates the job in
// the space if it is not there (the version-0 parameters, the state, a free lease), waits for
// the lease as a standby, then runs or resumes the job from the space. Several managers may be
// started at once: given the same initial model, duplicates of a new job's initial tuples are
// identical and harmless (the lease merges duplicate tokens, the state keeps the newest).
ACAN_EXPORT Result<ManagerReport> RunManager(std::string_view space_uri, const JobConfig& job,
                                             const ManagerOptions& options = {});
ACAN_EXPORT Result<ManagerReport> RunManager(Space& space, const JobConfig& job,
                                             const ManagerOptions& options = {});

}  // namespace acan
