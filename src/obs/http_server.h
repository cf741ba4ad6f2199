// HttpServer: a small HTTP server on a thread of its own (cpp-httplib) for what a run shows while
// it goes: /metrics for Prometheus, the dashboard page and its data. Routes are added before
// Start; each answers from a callback called on the server's threads (the callback must be
// thread-safe). Binds to loopback unless told otherwise: the run's numbers stay on the machine.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "acan/status.h"

namespace httplib {
class Server;
}

namespace acan::obs {

struct HttpResponse {
  int status = 200;
  std::string body;
  std::string content_type = "text/plain; charset=utf-8";
};

class HttpServer {
 public:
  HttpServer();
  ~HttpServer();  // stops it
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Answers GET `path` (exact) with what `handler` returns.
  void Get(const std::string& path, std::function<HttpResponse()> handler);
  // Listens on `host`:`port` (0: a free port, see port()). InvalidArgument when it cannot bind,
  // naming the address.
  Status Start(int port, const std::string& host = "127.0.0.1");
  void Stop();
  int port() const { return port_; }
  std::string url() const;  // http://host:port

 private:
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::atomic<bool> ended_{false};  // the listening thread returned
  std::string host_;
  int port_ = 0;
};

}  // namespace acan::obs
