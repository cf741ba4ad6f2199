// NatsSpace: the tuple space on NATS JetStream, behind "nats://host:port[,host:port...]" and
// "nats:local" (a private server for one run). Several processes and machines that open the same
// URI share one space.
//
// Layout (DESIGN.md section 3, "Notes for the NATS JetStream backend"; the names are built in
// nats_layout.h):
//  - A key's first token is its namespace (a job's id): each namespace has streams of its own,
//    made when a client that may make them (a manager, or a client with no role) first writes in
//    it, so that a secure deployment's permissions reach one job and a handler's deletes cannot
//    reach another job's tuples. A pattern whose first token is a wildcard looks in every
//    namespace this client may see (every one on the server; a secure role: its job's).
//  - A tuple is one message on the subject <stream>.t.<size>.<key>; the stream's sequence is the
//    insertion order. <size> (the value's bytes) makes Stats exact from the server's per-subject
//    counts.
//  - A value larger than the server's max_payload travels as chunks put before the tuple that
//    names them, under subjects of the namespace and of the writer's role (a handler cannot write
//    a manager's chunks), so a reader never sees a tuple whose chunks were not all stored. The
//    tuple's header carries the value's SHA-256, and only its writer could write that header: a
//    reader returns the value only if the chunks (the first message on each chunk subject) hash
//    to it. A chunk missing later (a server that lost data) is DataLoss; a value whose chunks do
//    not hash to its digest is a DataLoss that IsTampered() recognises, logged with its subject.
//  - Read is a direct get of the first message after a sequence whose subject matches the pattern
//    (NATS wildcards are the space's: '*' a token, '>' the rest). Take is that read followed by
//    deleting the message by its sequence: the server lets exactly one deleter win, so two takers
//    never both get a tuple, whatever their patterns (a WorkQueue consumer cannot promise that for
//    overlapping filters such as 'ts.*.y' and 'ts.fwd.>'). The taker removes a taken value's
//    chunks: by a purge of their subjects where its role may purge, else by deleting each.
//  - A blocked Get/Take waits on a watch of the pattern's subjects (a core NATS subscription, kept
//    for the connection's life and shared by every waiter on that pattern) and looks again when a
//    matching put arrives, and at least every 50 ms (for a put whose notice raced the look).
//    Subscriptions are never destroyed while the connection is open: libnats 3.4.1 can crash when
//    one is destroyed while a message for it is being delivered (nats.c issue 637, fixed in 3.5).
//  - A cell is the last message on <stream>.r.<key> in its namespace's cells stream, which keeps
//    one message a subject (a JetStream KV bucket's layout) and allows no deletes or purges; its
//    revision is the message's sequence. SwapCell publishes with the expected last sequence of the
//    subject (none for revision 0), so the server lets exactly one of two swaps from a revision
//    through.
//  - Tuples and cells whose keys match SpaceOptions::fenced live apart, in the namespace's fenced
//    stream (<stream>.f.t.<size>.<key> and <stream>.f.r.<key>), so that a fenced put
//    (PutFenced) can be conditional on its cell where it is stored: it publishes with the
//    stream's expected last sequence, a sequence at which the cell was read at the fence's
//    revision, so that the server refuses it if anything, a swap of the cell included, was
//    stored there since (a put sent before the swap and arriving after it too). The stream
//    republishes what it stores on <stream>.w.t.<size>.<key> for WatchPuts: a refused put is
//    never seen as one.
//  - Requests that fail because the connection is down are retried until the call's deadline
//    (non-blocking calls: `retry_ms`), so a server restart costs time, not tuples. A publish
//    carries a message id and is retried only within the streams' de-duplication window
//    (`dedupe_ms`), so a retry after a lost reply is stored once. Streams that vanished (a
//    memory-storage server that restarted) are made again by a client that may make them.
// Thread-safe: one connection shared by every thread of the process.
#pragma once

#include <nats/nats.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "acan/space.h"
#include "common/thread_annotations.h"
#include "space/nats/local_server.h"
#include "space/nats/nats_layout.h"
#include "space/nats/secure.h"
#include "space/nats/wire.h"
#include "space/space_stats_internal.h"

namespace acan::nats {

struct NatsSpaceOptions {
  std::string servers;          // "nats://h:p,nats://h:p"
  std::string stream = "acan";  // stream name and subject prefix
  bool memory_storage = false;  // storage=memory|file
  int replicas = 1;             // stream replicas (a cluster: 3)
  int64_t request_ms = 5000;    // one request's wait for its reply
  int64_t retry_ms = 60000;     // how long a non-blocking call retries a lost connection
  // The streams' de-duplication window (set when this client creates them): how long the server
  // remembers a publish's message id, so that a publish retried after a lost reply is stored
  // once. A publish is retried only within the window of the streams it finds (less one
  // request). The server keeps every id of the window in memory (nats-server 2.9 keeps the map's
  // largest size too): 30 s instead of JetStream's 2 minutes cut its growth over a soak.
  int64_t dedupe_ms = 30000;
  size_t chunk_bytes = 0;  // values above this travel in chunks; 0: what a message allows
  SpaceOptions limits;
  // A secure deployment's role (secure.h): TLS with its certificate, its user and password; the
  // space is then confined to the deployment's job (credentials->job), and its replies come to
  // the role's own inbox prefix.
  std::optional<RoleCredentials> credentials;
  // What this client is: "manager" and "" (no role) make streams, purge and write chunks as a
  // manager; "handler" writes a handler's chunks and removes by deleting, never by purging (what
  // its permissions allow in a secure deployment, and the same without one); "observer" only
  // reads. With credentials, their role.
  std::string role;
};

class NatsSpace final : public Space {
 public:
  // Connects and creates the streams when they do not exist yet (limits, storage and replicas
  // apply then; later openers use the streams as they are).
  static Result<std::unique_ptr<NatsSpace>> Open(std::string uri, NatsSpaceOptions options);
  ~NatsSpace() override;

  using Space::Erase;
  using Space::Get;
  using Space::Put;
  using Space::Read;
  using Space::ReadAll;
  using Space::ReadKeys;
  using Space::Take;
  Status Put(Key key, Value value, Deadline deadline) override;
  Status PutFenced(Key key, Value value, const Fence& fence, Deadline deadline) override;
  Result<std::optional<Tuple>> Read(const Pattern& pattern) override;
  Result<Tuple> Get(const Pattern& pattern, Deadline deadline) override;
  Result<std::vector<Tuple>> Take(const Pattern& pattern, size_t max_count,
                                  Deadline deadline) override;
  Result<std::vector<Tuple>> ReadAll(const Pattern& pattern, size_t limit) override;
  Result<std::vector<Key>> ReadKeys(const Pattern& pattern, size_t limit) override;
  // One look at the server's per-subject counts and, when something matches, one purge by
  // subject: no value crosses the wire. Matches with chunked values are taken instead (a purge
  // would leave their chunks behind).
  Result<size_t> Erase(const Pattern& pattern) override;
  // A put returns Ok only once the server acknowledged storing it.
  bool AcknowledgesPuts() const override { return true; }
  Result<Cell> ReadCell(const Key& key) override;
  Result<uint64_t> SwapCell(const Key& key, Value value, uint64_t expected,
                            Deadline deadline) override;
  void Close() override;
  SpaceStats Stats() const override;
  const std::string& uri() const override { return uri_; }

  // Calls `on_put` with every tuple matching `pattern` put from now on by any client, in the
  // order the server received them (a core NATS subscription beside the stream: how an observer
  // in another process, the version oracle, sees what lands). On a libnats thread, one call at a
  // time. Values that travel in chunks are not delivered, only counted (watch_chunked()); a
  // subscriber too slow for the puts loses some (watch_dropped()): an account with either
  // nonzero is incomplete. Until the space is destroyed.
  Status WatchPuts(const Pattern& pattern, std::function<void(const Key&, const Value&)> on_put);
  uint64_t watch_chunked() const { return watch_chunked_.load(); }
  uint64_t watch_dropped() const;

  // Bytes of chunk payload per message (values above this travel in chunks).
  size_t chunk_bytes() const { return chunk_bytes_; }
  const NatsLayout& layout() const { return layout_; }
  // A private server this space started ("nats:local"), stopped when the space is destroyed.
  void AdoptServer(std::unique_ptr<LocalNatsServer> server) { server_ = std::move(server); }
  LocalNatsServer* server() const { return server_.get(); }

 private:
  // Where a tuple lives: its namespace's plain or fenced stream.
  struct Store {
    bool fenced = false;
    std::string ns;
    std::string stream;
    std::string prefix;  // of its tuples' subjects: <stream>.t. or <stream>.f.t.
  };
  // A tuple's message: where, its sequence and key, its inline value or its chunk list.
  struct Head {
    Store store;
    uint64_t seq = 0;
    Key key;
    size_t size = 0;
    std::string chunks;     // the Acan-Chunks header; empty for an inline value
    Value value;            // an inline value
    int64_t stored_ns = 0;  // when the server stored it (its streams' common order)
  };
  // Where a look for a pattern's matches stands in one store.
  struct Cursor {
    Store store;
    std::string filter;
    uint64_t from = 1;
    std::optional<Head> head;  // the next match, once looked up
    bool done = false;
  };
  // The cursors of every store a pattern may match in.
  Result<std::vector<Cursor>> CursorsFor(const Pattern& pattern);
  // The oldest next match over `cursors` (by when the server stored it, so that matches in
  // several streams come in the order they were put), or none; the cursor moves past it.
  Result<std::optional<Head>> NextMatch(std::vector<Cursor>& cursors, Deadline deadline);
  // Puts seen on one pattern's subjects, for the getters waiting on it.
  struct Watch {
    Mutex mu;
    CondVar cv;
    uint64_t puts GUARDED_BY(mu) = 0;
    natsSubscription* sub = nullptr;
  };
  static void OnWatchedPut(natsConnection*, natsSubscription*, natsMsg* msg, void* closure);
  struct PutWatch {
    NatsSpace* space = nullptr;
    std::function<void(const Key&, const Value&)> on_put;
    std::string prefix;  // of the subjects it gets, before <size>.<key>
    natsSubscription* sub = nullptr;
  };
  static void OnPutWatched(natsConnection*, natsSubscription*, natsMsg* msg, void* closure);
  // The watch of `filter`, made on first use; null when kMaxWatches exist (then getters poll).
  Watch* WatchFor(const std::string& filter);
  NatsSpace(std::string uri, NatsSpaceOptions options);
  Status Connect();
  // The server's asynchronous errors: a refused publish (a permission violation) is logged and
  // counted, so that the call waiting for its acknowledgement fails as PermissionDenied.
  static void OnAsyncError(natsConnection*, natsSubscription*, natsStatus err, void* closure);
  // PermissionDenied with the server's words when a permission violation arrived after
  // `violations_before` (a count of violations_), else Ok. The server's error names no request:
  // a request of another thread that fails in the same moment is told the same (a client whose
  // role allows what it does is never refused, so this happens only to one that tries more).
  Status RefusedSince(uint64_t violations_before, std::string_view what) const;

  // ---- namespaces and their streams (nats_streams.cc) ----
  bool MayManage() const { return options_.role.empty() || options_.role == "manager"; }
  // PermissionDenied for a key outside the namespace a secure role is confined to.
  Status CheckNamespace(std::string_view ns, std::string_view what) const;
  // Makes sure namespace `ns` has its streams: made when missing and `create` (and this client
  // may make them). *exists: whether they are there now (false only without `create`).
  Status EnsureNamespace(std::string_view ns, bool create, bool* exists);
  // Forgets that `ns` has its streams (they vanished), so the next use looks again.
  void ForgetNamespace(std::string_view ns) const;
  // The same for the namespace whose stream `stream` is.
  void ForgetStream(std::string_view stream) const;
  // The namespaces a pattern may match in, each with streams: one, or for a pattern whose first
  // token is a wildcard every one this client may see.
  Result<std::vector<std::string>> NamespacesFor(const Pattern& pattern);
  Result<std::vector<std::string>> AllNamespaces() const;
  // Keeps the shortest de-duplication window of the streams seen (dedupe_window_).
  void NoteDedupeWindow(const jsStreamInfo* info);
  // NATS_OK, NATS_NOT_FOUND (no such stream) or the error, with its info when `info`.
  natsStatus StreamInfo(const std::string& name, jsStreamInfo** info, jsErrCode* jerr) const;
  Status EnsureStream(StreamKind kind, std::string_view ns, bool create, bool* exists);

  bool IsFenced(const Key& key) const;
  Store StoreOf(const Key& key) const;
  Store MakeStore(bool fenced, std::string_view ns) const;
  // The stores that may hold a match of `pattern` in namespace `ns`: the plain one, the fenced
  // one or both.
  std::vector<Store> StoresFor(const Pattern& pattern, std::string_view ns) const;
  std::string CellSubject(const Key& key) const;
  std::string CellStream(const Key& key) const;
  ChunkWriter WriterOf(const Key& key) const;

  // ---- chunks (nats_chunks.cc) ----
  // Publishes `value` as chunks of namespace `ns`; returns the Acan-Chunks header naming them.
  Result<std::string> PutChunks(const Key& key, const Value& value, Deadline deadline);
  // The value of `head`: inline, or its chunks reassembled and checked against its digest.
  // *chunk_seqs: the chunks' sequences (for RemoveChunks).
  Result<Value> LoadValue(const Head& head, Deadline deadline,
                          std::vector<uint64_t>* chunk_seqs = nullptr);
  // Removes the chunks of a taken (or refused) value: a purge of their subjects where this
  // client may purge, else a delete of each (their sequences `seqs`, looked up when empty). A
  // failure only leaves garbage behind.
  void RemoveChunks(std::string_view ns, const wire::ChunkList& list, std::vector<uint64_t> seqs);
  void RemoveChunks(const Head& head, std::vector<uint64_t> seqs);
  // The first message on `subject` in `stream` (a chunk's: its writer's), as DirectGet.
  Status FirstOn(const std::string& stream, const std::string& subject, Deadline deadline,
                 natsMsg** msg, natsStatus* result) const;

  // Put and PutFenced: `fence` null for a plain put.
  Status PutValue(Key key, Value value, const Fence* fence, Deadline deadline);
  // Publishes the head of a fenced put, refused once the fence's cell moved.
  Status PublishFenced(const Key& key, const std::string& subject, const Value& value,
                       const char* chunks_header, const Fence& fence, Deadline deadline);
  // The fenced stream's last sequence, as its leader says.
  Result<uint64_t> FencedLastSequence(const std::string& stream, Deadline deadline) const;
  // A cell's revision as the stream's leader says (not a direct get, which a replica answers).
  Result<uint64_t> CellRevisionAtLeader(const Key& key, Deadline deadline) const;

  // The first tuple of `store` matching `filter` at or after sequence `from`, or none.
  Result<std::optional<Head>> FindFrom(const Store& store, const std::string& filter, uint64_t from,
                                       Deadline deadline);
  // Deletes `head`'s message; false when another taker deleted it first.
  Result<bool> DeleteHead(const Head& head, Deadline deadline);
  // Takes up to `max_count` matches without waiting (with `load`, their values too).
  Result<std::vector<Tuple>> TryTake(const Pattern& pattern, size_t max_count, Deadline deadline,
                                     bool load = true);
  // Reads up to `limit` matches without waiting.
  Result<std::vector<Tuple>> Scan(const Pattern& pattern, size_t limit, Deadline deadline);
  template <typename TryOnce>
  Status WaitFor(const Pattern& pattern, Deadline deadline, SpaceOp op, TryOnce try_once);
  // Publishes one message. With `expect_subject_seq`, only if the subject's last message has that
  // sequence (0: the subject has none), with `expect_stream_seq` only if the stream's has, else
  // FailedPrecondition. `seq`: the stored sequence. A subject no stream stores (the namespace's
  // streams vanished) has them made again, where this client may, and is published again.
  Status Publish(const std::string& subject, const void* data, size_t size,
                 const char* chunks_header, Deadline deadline,
                 const uint64_t* expect_subject_seq = nullptr, uint64_t* seq = nullptr,
                 const uint64_t* expect_stream_seq = nullptr, std::string_view ns = {});
  Status WaitForRoom(const Key& key, size_t size, Deadline deadline);
  // The server's count of messages per tuple subject of `store` matching `filter`: (value size,
  // count).
  Result<std::vector<std::pair<uint64_t, uint64_t>>> SubjectCounts(const Store& store,
                                                                   const std::string& filter,
                                                                   const char* what) const;
  // Sum of the value bytes of every tuple, from the server's per-subject counts.
  Result<uint64_t> StoredBytes(uint64_t* tuples) const;
  // Purges `filter` from `stream` (a client that may purge).
  Status PurgeSubjects(const std::string& stream, const std::string& filter, uint64_t keep,
                       const char* what);
  // Runs `request` (returning natsStatus, filling *jerr) until it succeeds, fails for a reason
  // other than a lost connection, or `deadline` passes.
  Status Retry(const char* what, Deadline deadline,
               const std::function<natsStatus()>& request) const;
  Deadline NonBlocking() const;
  Status CancelledStatus() const;
  // One direct get from `stream`, tried again on a lost connection until `deadline`: the server's
  // answer in *result (NATS_OK with the message in *msg, NATS_NOT_FOUND, ...), or an error. A
  // stream that is gone answers NATS_NOT_FOUND.
  Status DirectGet(const std::string& stream, jsDirectGetMsgOptions* options, Deadline deadline,
                   natsMsg** msg, natsStatus* result) const;

  const std::string uri_;
  const NatsSpaceOptions options_;
  const NatsLayout layout_;
  std::vector<Pattern> fenced_keys_;  // SpaceOptions::fenced
  // This client's last fenced put: its fence and where it was stored (PublishFenced).
  struct FenceSeen {
    std::string cell;
    uint64_t revision = 0;
    uint64_t seq = 0;
  };
  FenceSeen fence_seen_ GUARDED_BY(mu_);
  natsConnection* nc_ = nullptr;
  jsCtx* js_ = nullptr;
  size_t chunk_bytes_ = 0;
  size_t max_payload_ = 0;  // the server's, as the connection learnt it
  // The shortest de-duplication window of the streams seen (this client's own `dedupe_ms` at
  // first).
  std::chrono::nanoseconds dedupe_window_ GUARDED_BY(mu_) = {};
  std::string client_id_;  // unique per space object: message ids
  std::atomic<uint64_t> next_id_{0};
  std::atomic<bool> closed_{false};

  mutable Mutex mu_;
  // Namespaces with streams (forgotten by const reads that find one gone).
  mutable std::set<std::string, std::less<>> namespaces_ GUARDED_BY(mu_);
  std::unordered_map<std::string, std::unique_ptr<Watch>> watches_ GUARDED_BY(mu_);
  std::vector<std::unique_ptr<PutWatch>> put_watches_ GUARDED_BY(mu_);
  std::atomic<uint64_t> watch_chunked_{0};
  uint64_t bytes_estimate_ GUARDED_BY(mu_) = 0;  // see WaitForRoom
  Clock::time_point estimate_at_ GUARDED_BY(mu_) = {};

  std::atomic<uint64_t> waiting_{0}, wakeups_{0}, tampered_{0};
  StatsRecorder stats_;
  std::atomic<uint64_t> violations_{0};
  std::string last_violation_ GUARDED_BY(mu_);
  std::unique_ptr<LocalNatsServer> server_;  // stopped after the destructor closed nc_
};

// Registers "nats:" (nats://... and nats:local).
Status RegisterNatsSpace();

}  // namespace acan::nats
