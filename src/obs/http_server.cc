#include "obs/http_server.h"

#include <fmt/format.h>
#include <httplib.h>

#include <chrono>

namespace acan::obs {

HttpServer::HttpServer() : server_(std::make_unique<httplib::Server>()) {
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, which lets a second server share a
  // port in use (half the scrapes would reach the wrong process) instead of failing to bind.
  server_->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  // A page that polls keeps a connection open; Stop waits for it no longer than this.
  server_->set_keep_alive_timeout(1);
}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Get(const std::string& path, std::function<HttpResponse()> handler) {
  server_->Get(path,
               [handler = std::move(handler)](const httplib::Request&, httplib::Response& res) {
                 HttpResponse r = handler();
                 res.status = r.status;
                 res.set_header("Cache-Control", "no-store");
                 res.set_content(std::move(r.body), r.content_type.c_str());
               });
}

Status HttpServer::Start(int port, const std::string& host) {
  if (port < 0 || port > 65535) {
    return Status::InvalidArgument(fmt::format("port {} is not in 0..65535", port));
  }
  host_ = host;
  if (port == 0) {
    port_ = server_->bind_to_any_port(host);
    if (port_ <= 0) {
      return Status::InvalidArgument(fmt::format("cannot listen on {} (any port)", host));
    }
  } else {
    if (!server_->bind_to_port(host, port)) {
      return Status::InvalidArgument(fmt::format(
          "cannot listen on {}:{} (in use, or not an address of this machine)", host, port));
    }
    port_ = port;
  }
  ended_.store(false);
  thread_ = std::thread([this] {
    server_->listen_after_bind();
    ended_.store(true);
  });
  // Running before Start returns: a stop() that came before it would be lost (and Stop hang).
  while (!server_->is_running() && !ended_.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (ended_.load()) {
    thread_.join();
    return Status::Unavailable(
        fmt::format("the HTTP server on {}:{} stopped at once", host, port_));
  }
  return Status::Ok();
}

void HttpServer::Stop() {
  if (!thread_.joinable()) return;
  server_->stop();
  thread_.join();
}

std::string HttpServer::url() const { return fmt::format("http://{}:{}", host_, port_); }

}  // namespace acan::obs
