// NatsSpace: the namespaces' streams (looked up, made where this client may, forgotten when they
// vanish) and where a key lives in them. See nats_space.h.
#include <fmt/format.h>

#include <algorithm>

#include "space/nats/nats_space.h"
#include "space/nats/nats_space_internal.h"

namespace acan::nats {

// ---- namespaces ----

Status NatsSpace::CheckNamespace(std::string_view ns, std::string_view what) const {
  if (!options_.credentials || ns == options_.credentials->job) return Status::Ok();
  return Status::PermissionDenied(fmt::format(
      "{} in space '{}': namespace '{}' is another job's; the deployment's roles are for job '{}' "
      "(acan secure init --job)",
      what, uri_, ns, options_.credentials->job));
}

void NatsSpace::NoteDedupeWindow(const jsStreamInfo* info) {
  if (info == nullptr || info->Config == nullptr) return;
  // 0 is the server's default, two minutes.
  const std::chrono::nanoseconds window{info->Config->Duplicates > 0 ? info->Config->Duplicates
                                                                     : int64_t{120} * 1000000000};
  MutexLock lock(mu_);
  if (window < dedupe_window_) dedupe_window_ = window;
}

natsStatus NatsSpace::StreamInfo(const std::string& name, jsStreamInfo** info,
                                 jsErrCode* jerr) const {
  jsStreamInfo* si = nullptr;
  natsStatus result = NATS_OK;
  Status s = Retry("stream lookup", NonBlocking(), [&] {
    jsStreamInfo_Destroy(si);
    si = nullptr;
    *jerr = static_cast<jsErrCode>(0);
    result = js_GetStreamInfo(&si, js_, name.c_str(), nullptr, jerr);
    return result;
  });
  if (!s.ok()) result = s.IsCancelled() ? NATS_CONNECTION_CLOSED : NATS_TIMEOUT;
  if (info != nullptr && result == NATS_OK) {
    *info = si;
  } else {
    jsStreamInfo_Destroy(si);
  }
  return result;
}

Status NatsSpace::EnsureStream(StreamKind kind, std::string_view ns, bool create, bool* exists) {
  const std::string name = layout_.StreamName(kind, ns);
  jsStreamInfo* si = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  const uint64_t violations = violations_.load();
  natsStatus s = StreamInfo(name, &si, &jerr);
  ACAN_RETURN_IF_ERROR(RefusedSince(violations, "stream lookup"));
  if (s == NATS_OK) NoteDedupeWindow(si);
  jsStreamInfo_Destroy(si);
  *exists = s == NATS_OK;
  if (s == NATS_OK || (s == NATS_NOT_FOUND && !create)) return Status::Ok();
  if (s != NATS_NOT_FOUND) {
    if (s == NATS_CONNECTION_CLOSED && closed_.load()) return CancelledStatus();
    return Status::Unavailable(fmt::format("cannot look up stream '{}' on '{}': {}", name,
                                           options_.servers, NatsError(s, jerr)));
  }
  if (!MayManage()) {
    return Status::NotFound(fmt::format(
        "space '{}': namespace '{}' has no streams yet (stream '{}'), and a client of role '{}' "
        "does not make them: its job's manager does",
        uri_, ns, name, options_.role));
  }
  const std::vector<std::string> subjects = layout_.StreamSubjects(kind, ns);
  std::vector<const char*> subject_list;
  for (const std::string& subj : subjects) subject_list.push_back(subj.c_str());
  jsStreamConfig cfg;
  jsStreamConfig_Init(&cfg);
  cfg.Name = name.c_str();
  cfg.Subjects = subject_list.data();
  cfg.SubjectsLen = static_cast<int>(subject_list.size());
  // Cells (the audit log's records among them) are on file whatever the tuples' storage: an
  // append-only record survives a restart of the server, and a memory-stored one would hold
  // every record of a long run in the server's memory (a death and a join for every crash). So
  // are the fenced tuples and their chunks (the versions, the manager's state, the descriptor,
  // the lease): what a job is made again from when a memory-storage server that restarted lost
  // every other tuple (docs/architecture.md, "Forged, and lost all at once").
  const bool in_memory = options_.memory_storage && kind != StreamKind::kCells &&
                         kind != StreamKind::kFenced && kind != StreamKind::kFencedChunks;
  cfg.Storage = in_memory ? js_MemoryStorage : js_FileStorage;
  cfg.Replicas = options_.replicas;
  cfg.AllowDirect = true;
  cfg.Duplicates = options_.dedupe_ms * 1000000;  // nanoseconds
  if (kind == StreamKind::kCells) {
    cfg.MaxMsgsPerSubject = 1;  // a new revision replaces the old one
    cfg.DenyDelete = true;
    cfg.DenyPurge = true;  // the audit log: nobody wipes it
  }
  // What the fenced stream stores, and only that (a refused put is not), for WatchPuts.
  const std::string republish_from = layout_.RepublishSource(),
                    republish_to = layout_.RepublishDestination();
  jsRePublish republish;
  if (kind == StreamKind::kFenced) {
    jsRePublish_Init(&republish);
    republish.Source = republish_from.c_str();
    republish.Destination = republish_to.c_str();
    cfg.RePublish = &republish;
  }
  si = nullptr;
  jerr = static_cast<jsErrCode>(0);
  s = js_AddStream(&si, js_, &cfg, nullptr, &jerr);
  if (s == NATS_OK) NoteDedupeWindow(si);
  jsStreamInfo_Destroy(si);
  if (s == NATS_OK) {
    *exists = true;
    return Status::Ok();
  }
  ACAN_RETURN_IF_ERROR(RefusedSince(violations, "stream creation"));
  // Another opener may have created it in between.
  si = nullptr;
  if (StreamInfo(name, &si, &jerr) == NATS_OK) {
    NoteDedupeWindow(si);
    jsStreamInfo_Destroy(si);
    *exists = true;
    return Status::Ok();
  }
  return Status::Unavailable(fmt::format("cannot create stream '{}' ({}, {} replicas) on '{}': {}",
                                         name, in_memory ? "memory" : "file", options_.replicas,
                                         options_.servers, NatsError(s, jerr)));
}

Status NatsSpace::EnsureNamespace(std::string_view ns, bool create, bool* exists) {
  {
    MutexLock lock(mu_);
    if (namespaces_.contains(ns)) {
      *exists = true;
      return Status::Ok();
    }
  }
  ACAN_RETURN_IF_ERROR(CheckNamespace(ns, "access"));
  *exists = true;
  for (StreamKind kind : kStreamKinds) {
    bool there = false;
    ACAN_RETURN_IF_ERROR(EnsureStream(kind, ns, create, &there));
    *exists = *exists && there;
    if (!*exists) break;  // only a look: one missing stream says it
  }
  if (*exists) {
    MutexLock lock(mu_);
    namespaces_.emplace(ns);
  }
  return Status::Ok();
}

void NatsSpace::ForgetNamespace(std::string_view ns) const {
  MutexLock lock(mu_);
  if (auto it = namespaces_.find(ns); it != namespaces_.end()) namespaces_.erase(it);
}

void NatsSpace::ForgetStream(std::string_view stream) const {
  for (StreamKind kind : kStreamKinds) {
    if (auto ns = layout_.NamespaceOfStream(kind, stream)) ForgetNamespace(*ns);
  }
}

Result<std::vector<std::string>> NatsSpace::AllNamespaces() const {
  if (options_.credentials) return std::vector<std::string>{options_.credentials->job};
  jsStreamNamesList* list = nullptr;
  natsStatus result = NATS_OK;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  ACAN_RETURN_IF_ERROR(Retry("listing the streams", NonBlocking(), [&] {
    jsStreamNamesList_Destroy(list);
    list = nullptr;
    result = js_StreamNames(&list, js_, nullptr, &jerr);
    return result;
  }));
  std::vector<std::string> out;
  if (result == NATS_OK && list != nullptr) {
    for (int i = 0; i < list->Count; ++i) {
      if (auto ns = layout_.NamespaceOfStream(StreamKind::kTuples, list->List[i])) {
        out.push_back(std::move(*ns));
      }
    }
  }
  jsStreamNamesList_Destroy(list);
  if (result != NATS_OK && result != NATS_NOT_FOUND) {
    if (result == NATS_CONNECTION_CLOSED && closed_.load()) return CancelledStatus();
    return Status::Unavailable(
        fmt::format("listing the streams of space '{}' failed: {}", uri_, NatsError(result, jerr)));
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::vector<std::string>> NatsSpace::NamespacesFor(const Pattern& pattern) {
  std::vector<std::string> candidates;
  if (std::optional<std::string> ns = NatsLayout::NamespaceOf(pattern)) {
    ACAN_RETURN_IF_ERROR(CheckNamespace(*ns, "read"));
    candidates.push_back(std::move(*ns));
  } else {
    ACAN_ASSIGN_OR_RETURN(candidates, AllNamespaces());
  }
  std::vector<std::string> out;
  for (std::string& ns : candidates) {
    bool exists = false;
    ACAN_RETURN_IF_ERROR(EnsureNamespace(ns, /*create=*/false, &exists));
    if (exists) out.push_back(std::move(ns));
  }
  return out;
}

// ---- where keys live ----

bool NatsSpace::IsFenced(const Key& key) const {
  for (const Pattern& p : fenced_keys_) {
    if (p.Matches(key)) return true;
  }
  return false;
}

NatsSpace::Store NatsSpace::MakeStore(bool fenced, std::string_view ns) const {
  return Store{fenced, std::string(ns),
               layout_.StreamName(fenced ? StreamKind::kFenced : StreamKind::kTuples, ns),
               layout_.TuplePrefix(fenced)};
}

NatsSpace::Store NatsSpace::StoreOf(const Key& key) const {
  return MakeStore(IsFenced(key), NatsLayout::NamespaceOf(key));
}

std::vector<NatsSpace::Store> NatsSpace::StoresFor(const Pattern& pattern,
                                                   std::string_view ns) const {
  bool overlaps = false;
  for (const Pattern& p : fenced_keys_) {
    if (p.Covers(pattern)) return {MakeStore(true, ns)};
    overlaps = overlaps || p.Overlaps(pattern);
  }
  if (overlaps) return {MakeStore(false, ns), MakeStore(true, ns)};
  return {MakeStore(false, ns)};
}

std::string NatsSpace::CellSubject(const Key& key) const {
  return layout_.CellSubject(IsFenced(key), key);
}

std::string NatsSpace::CellStream(const Key& key) const {
  return layout_.StreamName(IsFenced(key) ? StreamKind::kFenced : StreamKind::kCells,
                            NatsLayout::NamespaceOf(key));
}

ChunkWriter NatsSpace::WriterOf(const Key& key) const {
  if (IsFenced(key)) return ChunkWriter::kFenced;
  return options_.role == "handler" ? ChunkWriter::kHandler : ChunkWriter::kManager;
}

}  // namespace acan::nats
