#include "cli/logging.h"

#include <fmt/format.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>

namespace acan::cli {

namespace {

// {"ts":"2026-12-01T20:13:21.123Z","level":"warn","role":"manager","pid":42,"msg":"..."}
class JsonFormatter : public spdlog::formatter {
 public:
  explicit JsonFormatter(std::string role) : role_(std::move(role)) {}

  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const auto since = msg.time.time_since_epoch();
    const auto s = std::chrono::duration_cast<std::chrono::seconds>(since);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(since - s).count();
    std::time_t t = s.count();
    std::tm utc{};
    gmtime_r(&t, &utc);
    char ts[32];
    std::strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &utc);
    nlohmann::json line = {{"ts", fmt::format("{}.{:03}Z", ts, ms)},
                           {"level", std::string(spdlog::level::to_string_view(msg.level).data(),
                                                 spdlog::level::to_string_view(msg.level).size())},
                           {"role", role_},
                           {"pid", static_cast<int64_t>(getpid())},
                           {"msg", std::string(msg.payload.data(), msg.payload.size())}};
    // Invalid UTF-8 in a message (a damaged key) is replaced, not thrown.
    const std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    dest.append(text.data(), text.data() + text.size());
    dest.push_back('\n');
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>(role_);
  }

 private:
  std::string role_;
};

}  // namespace

Status SetUpLogging(const std::string& level_in, bool json, const std::string& role) {
  std::string level = level_in;
  if (level.empty()) {
    const char* env = std::getenv("ACAN_LOG_LEVEL");
    level = env && *env ? env : "warn";
  }
  if (!json) {
    const char* env = std::getenv("ACAN_LOG_JSON");
    json = env && std::string(env) == "1";
  }
  const auto parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && level != "off") {
    return Status::InvalidArgument(
        fmt::format("--log-level '{}': expected trace, debug, info, warn, error or off", level));
  }
  // What the children of a supervisor inherit.
  setenv("ACAN_LOG_LEVEL", level.c_str(), 1);
  setenv("ACAN_LOG_JSON", json ? "1" : "0", 1);
  auto logger =
      std::make_shared<spdlog::logger>("acan", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  if (json) {
    logger->set_formatter(std::make_unique<JsonFormatter>(role));
  } else {
    logger->set_formatter(std::make_unique<spdlog::pattern_formatter>(
        fmt::format("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [{} %P] %v", role)));
  }
  logger->set_level(parsed);
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
  return Status::Ok();
}

}  // namespace acan::cli
