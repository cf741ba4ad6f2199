// NatsSpace: cells (a compare-and-set on a subject's last sequence) and fenced puts (a publish
// that the server stores only while a cell is still at the writer's revision). See nats_space.h.
#include <fmt/format.h>

#include "common/kill_point.h"
#include "space/cell_internal.h"
#include "space/nats/nats_space.h"
#include "space/nats/nats_space_internal.h"
#include "space/nats/wire.h"

namespace acan::nats {

Result<uint64_t> NatsSpace::FencedLastSequence(const std::string& stream, Deadline deadline) const {
  jsStreamInfo* si = nullptr;
  natsStatus result = NATS_OK;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  ACAN_RETURN_IF_ERROR(Retry("fenced put", deadline, [&] {
    jsStreamInfo_Destroy(si);
    si = nullptr;
    jerr = static_cast<jsErrCode>(0);
    result = js_GetStreamInfo(&si, js_, stream.c_str(), nullptr, &jerr);
    return result;
  }));
  const uint64_t last = result == NATS_OK ? si->State.LastSeq : 0;
  jsStreamInfo_Destroy(si);
  if (result != NATS_OK) {
    return Status::Unavailable(
        fmt::format("fenced put in space '{}': no stream info: {}", uri_, NatsError(result, jerr)));
  }
  return last;
}

Result<uint64_t> NatsSpace::CellRevisionAtLeader(const Key& key, Deadline deadline) const {
  const std::string subject = CellSubject(key);
  const std::string stream = CellStream(key);
  natsMsg* msg = nullptr;
  natsStatus result = NATS_OK;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  ACAN_RETURN_IF_ERROR(Retry("fenced put", deadline, [&] {
    natsMsg_Destroy(msg);
    msg = nullptr;
    jerr = static_cast<jsErrCode>(0);
    result = js_GetLastMsg(&msg, js_, stream.c_str(), subject.c_str(), nullptr, &jerr);
    return result;
  }));
  MsgGuard got{msg};
  if (result == NATS_NOT_FOUND || jerr == JSNoMessageFoundErr) return uint64_t{0};
  if (result != NATS_OK) {
    return Status::Unavailable(fmt::format("fenced put in space '{}': cannot read cell '{}': {}",
                                           uri_, key.str(), NatsError(result, jerr)));
  }
  return natsMsg_GetSequence(msg);
}

// A publish expecting the stream's last sequence to be one at which the fence's cell was read at
// its revision: stored only if nothing was stored since, so a swap of the cell in between (a
// standby that took the lease) makes the server refuse it whenever it arrives. Another writer's
// put in between refuses it too: then the cell is read again and, if still at the revision, the
// publish goes again from the new last sequence.
Status NatsSpace::PublishFenced(const Key& key, const std::string& subject, const Value& value,
                                const char* chunks_header, const Fence& fence, Deadline deadline) {
  // Where the last fenced put of this client with the same fence was stored: nothing else was
  // stored between the read of the cell at that revision and it, so a publish expecting it as the
  // last sequence is fenced as well. Any other fence starts with a read of its cell.
  std::optional<uint64_t> expect;
  {
    MutexLock lock(mu_);
    if (fence_seen_.revision == fence.revision && fence_seen_.cell == fence.cell.str()) {
      expect = fence_seen_.seq;
    }
  }
  for (int round = 0;; ++round) {
    if (!expect.has_value()) {
      // The stream's last sequence, then the cell, in that order: a swap after the first read
      // makes the publish below fail, one before it shows in the second.
      ACAN_ASSIGN_OR_RETURN(uint64_t last, FencedLastSequence(StoreOf(key).stream, deadline));
      ACAN_ASSIGN_OR_RETURN(uint64_t revision, CellRevisionAtLeader(fence.cell, deadline));
      if (revision != fence.revision) return FenceMoved(key, fence, uri_, RevisionWords(revision));
      expect = last;
    }
    KillPoint("fenced");  // the last moment before the put is on its way
    uint64_t seq = 0;
    Status s = Publish(subject, value.data(), value.size(), chunks_header, deadline, nullptr, &seq,
                       &*expect, NatsLayout::NamespaceOf(key));
    if (s.ok()) {
      MutexLock lock(mu_);
      fence_seen_ = {fence.cell.str(), fence.revision, seq};
      return Status::Ok();
    }
    if (s.code() != StatusCode::kFailedPrecondition) return s;
    // Something was stored since: another writer's put, or a swap of the cell. Look again.
    expect.reset();
    if (deadline.expired() && round > 0) {
      return Status::Unavailable(fmt::format(
          "fenced put of '{}' in space '{}': other writers kept the stream busy until the "
          "deadline",
          key.str(), uri_));
    }
  }
}

// ---- cells ----

Result<Cell> NatsSpace::ReadCell(const Key& key) {
  const auto start = Clock::now();
  auto read = [&]() -> Result<Cell> {
    if (closed_.load()) return CancelledStatus();
    bool exists = false;
    ACAN_RETURN_IF_ERROR(EnsureNamespace(NatsLayout::NamespaceOf(key), false, &exists));
    if (!exists) return Cell();
    const std::string subject = CellSubject(key);
    MsgGuard got;
    jsDirectGetMsgOptions dg;
    jsDirectGetMsgOptions_Init(&dg);
    dg.LastBySubject = subject.c_str();
    natsStatus result = NATS_OK;
    ACAN_RETURN_IF_ERROR(DirectGet(CellStream(key), &dg, NonBlocking(), &got.msg, &result));
    if (result == NATS_NOT_FOUND) return Cell();
    if (result != NATS_OK) {
      if (result == NATS_CONNECTION_CLOSED && closed_.load()) return CancelledStatus();
      return Status::Unavailable(fmt::format("read of cell '{}' in space '{}' failed: {}",
                                             key.str(), uri_, NatsError(result, 0)));
    }
    const char* seq_text = nullptr;
    natsMsgHeader_Get(got.msg, "Nats-Sequence", &seq_text);
    std::string_view seq_view = seq_text ? seq_text : "";
    Cell cell;
    auto revision = wire::ParseSequence(seq_view);
    if (!revision.ok()) {
      return Status::DataLoss(
          fmt::format("space '{}': cell '{}' has no revision ('{}')", uri_, key.str(), seq_view));
    }
    cell.revision = *revision;
    const int len = natsMsg_GetDataLength(got.msg);
    cell.value = Value::CopyOf(natsMsg_GetData(got.msg), static_cast<size_t>(len));
    stats_.CountBytes(0, cell.value.size());
    return cell;
  };
  auto r = read();
  stats_.Record(SpaceOp::kReadCell, start, r.ok() ? Status::Ok() : r.status());
  return r;
}

Result<uint64_t> NatsSpace::SwapCell(const Key& key, Value value, uint64_t expected,
                                     Deadline deadline) {
  const auto start = Clock::now();
  auto swap = [&]() -> Result<uint64_t> {
    if (closed_.load()) return CancelledStatus();
    ACAN_RETURN_IF_ERROR(CheckCellValue(key, value, uri_));
    const std::string_view ns = NatsLayout::NamespaceOf(key);
    bool exists = false;
    ACAN_RETURN_IF_ERROR(EnsureNamespace(ns, /*create=*/true, &exists));
    stats_.CountBytes(value.size(), 0);
    uint64_t revision = 0;
    const std::string subject = CellSubject(key);
    Status s = Publish(subject, value.data(), value.size(), nullptr, deadline, &expected, &revision,
                       nullptr, ns);
    if (s.code() == StatusCode::kFailedPrecondition) {
      auto now = ReadCell(key);  // the server names no revision: look
      std::string found = "a later revision";
      if (now.ok()) {
        found = now->revision != 0 ? fmt::format("revision {}", now->revision)
                                   : std::string("no revision (there is no cell)");
      }
      return CellMoved(key, expected, uri_, found);
    }
    ACAN_RETURN_IF_ERROR(s);
    if (IsFenced(key) && MayManage()) {
      // The fenced stream keeps every message: its cell's older revisions go (a failed purge
      // leaves them for the next swap).
      (void)PurgeSubjects(CellStream(key), subject, 1, "dropping a cell's old revisions");
    }
    return revision;
  };
  auto r = swap();
  stats_.Record(SpaceOp::kSwapCell, start, r.ok() ? Status::Ok() : r.status());
  return r;
}

}  // namespace acan::nats
