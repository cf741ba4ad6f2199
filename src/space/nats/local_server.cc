#include "space/nats/local_server.h"

#include <fmt/format.h>
#include <nats/nats.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <vector>

#include "common/child_process.h"

namespace acan::nats {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string NatsServerExecutable() {
  if (const char* env = std::getenv("ACAN_NATS_SERVER"); env && *env) return env;
  if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    for (std::string dir; std::getline(dirs, dir, ':');) {
      fs::path candidate = fs::path(dir) / "nats-server";
      if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) return candidate;
    }
  }
  return "/usr/sbin/nats-server";
}

namespace {

std::string LogTail(const std::string& path, size_t max_bytes = 600) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.size() > max_bytes) text = "..." + text.substr(text.size() - max_bytes);
  return text;
}

// True once the server at `url` answers a JetStream account-info request (as `credentials`,
// when it wants them).
bool JetStreamAnswers(const std::string& url, const std::optional<RoleCredentials>& credentials) {
  natsOptions* opts = nullptr;
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  jsAccountInfo* info = nullptr;
  bool ok = natsOptions_Create(&opts) == NATS_OK &&
            natsOptions_SetURL(opts, url.c_str()) == NATS_OK &&
            (!credentials || ApplyCredentials(opts, *credentials).ok()) &&
            natsOptions_SetTimeout(opts, 1000) == NATS_OK &&
            natsConnection_Connect(&nc, opts) == NATS_OK &&
            natsConnection_JetStream(&js, nc, nullptr) == NATS_OK &&
            js_GetAccountInfo(&info, js, nullptr, nullptr) == NATS_OK;
  jsAccountInfo_Destroy(info);
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  natsOptions_Destroy(opts);
  return ok;
}

}  // namespace

Result<std::unique_ptr<LocalNatsServer>> LocalNatsServer::Start(const LocalServerOptions& options) {
  if (options.store_dir.empty()) {
    return Status::InvalidArgument("a local nats-server needs a store directory");
  }
  std::unique_ptr<LocalNatsServer> server(new LocalNatsServer(options));
  std::error_code ec;
  fs::create_directories(options.store_dir, ec);
  if (ec) {
    return Status::Unavailable(fmt::format("cannot create the nats-server store directory '{}': {}",
                                           options.store_dir, ec.message()));
  }
  server->options_.store_dir = fs::absolute(options.store_dir).string();
  server->port_ = options.port;
  ACAN_RETURN_IF_ERROR(server->Launch());
  return server;
}

Status LocalNatsServer::Launch() {
  const fs::path dir = options_.store_dir;
  config_path_ = (dir / "nats-server.conf").string();
  log_path_ = (dir / "nats-server.log").string();
  const fs::path ports_dir = dir / "ports";
  std::error_code ec;
  fs::remove_all(ports_dir, ec);
  fs::create_directories(ports_dir, ec);
  {
    std::ofstream conf(config_path_, std::ios::trunc);
    // Loopback only; a port of -1 lets the server pick a free one and report it in its ports file.
    conf << "listen: 127.0.0.1:" << (port_ > 0 ? std::to_string(port_) : "-1") << "\n"
         << "jetstream {\n  store_dir: \"" << dir.string() << "\"\n}\n"  // adds jetstream/
         << options_.extra_config << "\n";
    if (!conf) {
      return Status::Unavailable(fmt::format("cannot write '{}'", config_path_));
    }
  }
  const std::string exe = NatsServerExecutable();
  if (access(exe.c_str(), X_OK) != 0) {
    return Status::Unavailable(fmt::format(
        "nats-server not found (looked for '{}'); install Debian's nats-server package or set "
        "ACAN_NATS_SERVER",
        exe));
  }
  std::vector<std::string> args = {
      exe, "-c", config_path_, "--ports_file_dir", ports_dir.string(), "-l", log_path_};
  // The server dies with its owner (a killed run never leaves a server behind), in a process
  // group of its own: a terminal's Ctrl-C (SIGINT to the foreground group) reaches the run's
  // processes, which leave cleanly through the server, and not the server, which its owner
  // stops after them.
  SpawnOptions spawn;
  spawn.parent_death_signal = SIGTERM;
  spawn.own_process_group = true;
  spawn.quiet = true;
  ACAN_ASSIGN_OR_RETURN(const pid_t pid, SpawnChild(args, spawn));
  pid_ = pid;
  const auto give_up = std::chrono::steady_clock::now() + options_.ready_timeout;
  const fs::path ports_file = ports_dir / fmt::format("nats-server_{}.ports", pid);
  while (std::chrono::steady_clock::now() < give_up) {
    int wstatus = 0;
    if (waitpid(pid_, &wstatus, WNOHANG) == pid_) {
      pid_ = -1;
      return Status::Unavailable(
          fmt::format("nats-server exited at start (status {}); its log '{}' ends: {}", wstatus,
                      log_path_, LogTail(log_path_)));
    }
    if (url_.empty() && fs::exists(ports_file)) {
      std::ifstream in(ports_file);
      auto ports = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
      if (ports.is_object() && ports.contains("nats") && ports["nats"].is_array() &&
          !ports["nats"].empty() && ports["nats"][0].is_string()) {
        url_ = ports["nats"][0].get<std::string>();
        port_ = std::stoi(url_.substr(url_.rfind(':') + 1));
      }
    }
    if (!url_.empty() && JetStreamAnswers(url_, options_.probe_credentials)) return Status::Ok();
    std::this_thread::sleep_for(10ms);
  }
  Kill();
  return Status::Unavailable(
      fmt::format("nats-server did not answer within {} ms; its log '{}' ends: {}",
                  options_.ready_timeout.count(), log_path_, LogTail(log_path_)));
}

void LocalNatsServer::Stop(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  const auto give_up = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < give_up) {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(5ms);
  }
  Kill();
}

void LocalNatsServer::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

Status LocalNatsServer::Restart() {
  if (pid_ > 0) return Status::FailedPrecondition("the nats-server is still running");
  url_.clear();
  return Launch();
}

LocalNatsServer::~LocalNatsServer() {
  Stop();
  if (options_.remove_store) {
    std::error_code ec;
    fs::remove_all(options_.store_dir, ec);
  }
}

}  // namespace acan::nats
