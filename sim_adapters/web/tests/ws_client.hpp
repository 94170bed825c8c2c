#pragma once
// Raw HTTP and WebSocket clients for the web console's tests (Boost.Beast, with
// TLS over Asio's SSL streams), on loopback addresses (or a network namespace
// the test made) only, every operation bounded in time: no browser needed.
// Compiled once in ws_client.cpp (target simsync_web_test_client): this header
// names no Beast stream, so a test including it instantiates none.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/http/verb.hpp>
#include <boost/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace simsync::web::test {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

struct HttpResult {
    bool ok = false; // a response arrived
    unsigned status = 0;
    std::string body;
    std::string content_type;
    std::string security_policy;
};

// Where a test client connects from and to, and how.
struct Route {
    std::string address = "127.0.0.1"; // the console's address
    std::string source{};              // the client's own address ("" = the system's choice)
    asio::ssl::context* tls = nullptr; // TLS with this context (it decides what is trusted)
};

// Opens `socket` bound to `route.source` if given, for a connection to `route.address`.
void open_from(tcp::socket& socket, const Route& route);

// One HTTP request on a fresh connection (HTTPS with route.tls).
HttpResult http_request(std::uint16_t port, http::verb verb, const std::string& target, const std::string& host = "",
                        const Route& route = {});

// Sends raw bytes on a fresh connection and returns what comes back until the
// server closes (or the timeout).
std::string raw_exchange(std::uint16_t port, const std::string& bytes, const Route& route = {});

// How a WsClient connects.
struct Connect {
    std::string target = "/ws";
    std::string origin{};       // sent as Origin if not empty
    int receive_buffer = 0;     // SO_RCVBUF if > 0 (a stalled reader's window)
    Route route{};              // from and to where, TLS or not
    // The hello sent once connected: its token ("" = a hello without one), or
    // nullopt to send none (the caller speaks first, or never).
    std::optional<std::string> hello = std::string();
};

// A WebSocket client of the console (ws, or wss with a TLS route). One thread
// at a time; every call bounded in time.
class WsClient {
public:
    WsClient();
    ~WsClient();
    WsClient(const WsClient&) = delete;
    WsClient& operator=(const WsClient&) = delete;

    // Connects, completes the handshakes and sends the hello; "" on success,
    // else the error.
    std::string connect(std::uint16_t port, const Connect& how = {});

    // The next message, or nullopt (closed, error or timeout; see closed()).
    std::optional<std::string> read(std::chrono::milliseconds timeout = 10000ms);

    // The next message of `type` ("frame", "reply", ...), skipping others.
    std::optional<boost::json::object> next(const std::string& type, std::chrono::milliseconds timeout = 10000ms);

    // The first frame that satisfies `condition`.
    std::optional<boost::json::object> frame_where(const std::function<bool(const boost::json::object&)>& condition,
                                                   std::chrono::milliseconds timeout = 20000ms);

    bool send_text(const std::string& text);
    bool send_binary(const std::string& bytes);

    // Sends a command and returns its reply.
    std::optional<boost::json::object> command(const std::string& text);

    bool closed() const noexcept;
    std::uint16_t close_code() const noexcept;
    const std::string& close_reason() const noexcept;

private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

double number(const boost::json::value& v);
std::uint64_t steps_of(const boost::json::object& frame);
std::string str(const boost::json::value& v);

} // namespace simsync::web::test
