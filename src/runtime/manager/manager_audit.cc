// Manager: what it records in the job's audit log (runtime/audit/audit.h): the lease it took and
// the versions it found, handlers joining and leaving, refused (tampered) outputs, the job's end
// with every shard's final version. See manager.h.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <map>
#include <optional>
#include <string>

#include "nn/model.h"
#include "nn/model_stream.h"
#include "nn/safetensors.h"
#include "runtime/core/messages.h"
#include "runtime/manager/manager.h"
#include "runtime/state/version_store.h"

namespace acan::runtime {

void Manager::RecordTampering(const Key& key, const Status& status) {
  progress_.tampered++;
  spdlog::error("manager {}: '{}' is refused and made again: {}", options_.owner, key.str(),
                status.message());
  if (audit_) audit_->Append("tampering", {{"key", key.str()}, {"what", status.message()}});
}

Status Manager::AuditLease() {
  audit_ = std::make_unique<AuditLog>(raw_space_, &layout_, options_.owner, options_.audit_signer);
  // The versions as this manager finds them, hashed as they are read (never all held at once):
  // what a predecessor applied after its last record is in the chain from here.
  std::vector<WrittenVersion> found;
  for (const auto& [shard, v] : versions_.versions()) {
    ACAN_RETURN_IF_ERROR(lease_.Keep());  // many large tiles take longer to read than a lease
    ACAN_ASSIGN_OR_RETURN(auto t, space_->Read(layout_.State(shard, v)));
    if (!t.has_value()) continue;
    found.push_back({shard, v, t->value, ""});
    found.back().Hash();
  }
  audited_step_ticket_ = audit_->AppendVersions("lease",
                                                {{"lease_revision", lease_.revision()},
                                                 {"takeover", progress_.next_step > 0},
                                                 {"next_step", progress_.next_step}},
                                                std::move(found));
  return Status::Ok();
}

Status Manager::AuditHandler(int handler) {
  if (!audit_) return Status::Ok();
  // A notice says handler `handler` came back or went: its alive tuple says which.
  ACAN_ASSIGN_OR_RETURN(auto alive, space_->Read(layout_.Alive(handler)));
  if (alive.has_value()) {
    auto a = DecodeAliveMessage(alive->value);
    audit_->Append("handler_joined", {{"handler", handler},
                                      {"incarnation", a.ok() ? a->incarnation : int64_t{0}},
                                      {"memory", a.ok() ? a->memory : int64_t{0}}});
  } else {
    audit_->Append("handler_left", {{"handler", handler}});
  }
  return Status::Ok();
}

Status Manager::AuditEnd() {
  if (!audit_ || !progress_.finished) return Status::Ok();
  const int64_t last = progress_.total_steps;
  const auto keep = [this] { return lease_.Keep(); };
  std::map<std::string, std::string> hashed;  // final versions hashed as the model was written
  // Without a budget, the model's rows a row block at a time (each shard read once). Within one,
  // the model goes to a scratch file a shard at a time, each shard read once (and hashed as
  // read), and its rows come from the file: bands of a sixteenth of the budget over the space
  // would read each tile once for every band it crosses.
  std::optional<ScratchFile> file;
  nn::BandReader rows = VersionRows(space_, layout_, *plan_, last);
  if (options_.memory > 0) {
    file.emplace("audit");
    ACAN_ASSIGN_OR_RETURN(
        rows, SavedVersionRows(space_, layout_, *plan_, last, file->path(), /*scratch=*/true, keep,
                               [&](const std::string& key, const Value& value) {
                                 hashed[key] = nn::BytesSha256(
                                     {reinterpret_cast<const char*>(value.data()), value.size()});
                               }));
  }
  std::string model_sha256;
  if (!plan_->net().empty()) {
    // A list of layers (no budget covers one): its tensors are not a dense stack's row blocks;
    // the model is read whole.
    ACAN_RETURN_IF_ERROR(keep());
    ACAN_ASSIGN_OR_RETURN(const nn::Model model, ReadModel(space_, layout_, *plan_, last));
    model_sha256 = nn::ModelSha256(model);
  } else {
    ACAN_ASSIGN_OR_RETURN(model_sha256, nn::StreamedModelSha256(
                                            plan_->widths(),
                                            [&](int layer, bool bias, int64_t r0,
                                                int64_t r1) -> Result<std::vector<float>> {
                                              ACAN_RETURN_IF_ERROR(keep());
                                              return rows(layer, bias, r0, r1);
                                            },
                                            ReadBandRows(*plan_, options_.memory)));
  }
  // Every shard's final version, hashed as it is read: a model altered after the fact is named
  // tensor by tensor (acan audit verify --model).
  std::vector<WrittenVersion> finals;
  nlohmann::json tensors = nlohmann::json::object();
  for (const nn::ShardSpec& s : plan_->shards()) {
    tensors[s.key] = s.name;
    for (const std::string& key : {s.key, s.momentum_key}) {
      if (key.empty()) continue;
      const int64_t v = versions_.Current(key);
      if (auto it = hashed.find(key); it != hashed.end() && v == last) {
        finals.push_back({key, v, Value(), it->second});
        continue;
      }
      ACAN_RETURN_IF_ERROR(keep());
      ACAN_ASSIGN_OR_RETURN(auto t, space_->Read(layout_.State(key, v)));
      if (!t.has_value()) continue;
      finals.push_back({key, v, t->value, ""});
      finals.back().Hash();
    }
  }
  audit_->AppendVersions("job_end",
                         {{"final_model_sha256", model_sha256},
                          {"steps", progress_.total_steps},
                          {"versions_applied", progress_.versions_applied},
                          {"tensors", std::move(tensors)}},
                         std::move(finals));
  return audit_->Flush();
}

}  // namespace acan::runtime
