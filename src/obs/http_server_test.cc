// The HTTP server on loopback: a free port, the routes answered, a clear error for a port in use.
#include "obs/http_server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>

namespace acan::obs {
namespace {

TEST(HttpServerTest, AnswersItsRoutesOnAFreePortAndStops) {
  HttpServer server;
  std::atomic<int> calls{0};
  server.Get("/metrics", [&] {
    calls++;
    return HttpResponse{200, "acan_up 1\n", "text/plain; version=0.0.4"};
  });
  ASSERT_TRUE(server.Start(0).ok());
  ASSERT_GT(server.port(), 0);
  httplib::Client client("127.0.0.1", server.port());
  auto r = client.Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "acan_up 1\n");
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/plain; version=0.0.4");
  auto missing = client.Get("/nothing");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(calls.load(), 1);
  server.Stop();
  EXPECT_FALSE(client.Get("/metrics"));
}

TEST(HttpServerTest, APortInUseIsAClearError) {
  HttpServer first;
  ASSERT_TRUE(first.Start(0).ok());
  HttpServer second;
  Status s = second.Start(first.port());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find(std::to_string(first.port())), std::string::npos) << s.ToString();
  EXPECT_EQ(HttpServer().Start(70000).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace acan::obs
