#pragma once
// Raw HTTP and WebSocket clients for the web console's tests (Boost.Beast), on
// loopback only, every operation bounded in time: no browser needed.

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace simsync::web::test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

// Runs `ioc` until `done` or the timeout; on a timeout, cancels and drains.
inline bool run_until(asio::io_context& ioc, const bool& done, std::chrono::milliseconds timeout,
                      const std::function<void()>& cancel)
{
    ioc.restart();
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done) {
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline) break;
        ioc.run_one_for(deadline - now);
        if (ioc.stopped()) ioc.restart();
    }
    if (done) return true;
    cancel();
    ioc.restart();
    ioc.run_for(2s);
    return false;
}

struct HttpResult {
    bool ok = false; // a response arrived
    unsigned status = 0;
    std::string body;
    std::string content_type;
    std::string security_policy;
};

// One HTTP request on a fresh connection.
inline HttpResult http_request(std::uint16_t port, http::verb verb, const std::string& target,
                               const std::string& host = "")
{
    asio::io_context ioc;
    beast::tcp_stream stream(ioc);
    HttpResult result;
    bool done = false;
    beast::flat_buffer buffer;
    http::request<http::empty_body> req(verb, target, 11);
    req.set(http::field::host, host.empty() ? "127.0.0.1:" + std::to_string(port) : host);
    http::response<http::string_body> res;
    stream.async_connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), [&](beast::error_code ec) {
        if (ec) {
            done = true;
            return;
        }
        http::async_write(stream, req, [&](beast::error_code ec2, std::size_t) {
            if (ec2) {
                done = true;
                return;
            }
            http::async_read(stream, buffer, res, [&](beast::error_code ec3, std::size_t) {
                result.ok = !ec3;
                done = true;
            });
        });
    });
    run_until(ioc, done, 10000ms, [&] { stream.cancel(); });
    if (result.ok) {
        result.status = res.result_int();
        result.body = res.body();
        result.content_type = std::string(res[http::field::content_type]);
        result.security_policy = std::string(res["Content-Security-Policy"]);
    }
    return result;
}

// Sends raw bytes on a fresh connection and returns what comes back until the
// server closes (or the timeout).
inline std::string raw_exchange(std::uint16_t port, const std::string& bytes)
{
    asio::io_context ioc;
    tcp::socket socket(ioc);
    std::string received;
    bool done = false;
    std::array<char, 4096> chunk{};
    std::function<void()> read_more = [&] {
        socket.async_read_some(asio::buffer(chunk), [&](beast::error_code ec, std::size_t n) {
            received.append(chunk.data(), n);
            if (ec) {
                done = true;
                return;
            }
            read_more();
        });
    };
    socket.async_connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), [&](beast::error_code ec) {
        if (ec) {
            done = true;
            return;
        }
        asio::async_write(socket, asio::buffer(bytes), [&](beast::error_code, std::size_t) { read_more(); });
    });
    run_until(ioc, done, 10000ms, [&] {
        beast::error_code ignored;
        socket.close(ignored);
    });
    return received;
}

// A WebSocket client of the console.
class WsClient {
public:
    WsClient() : ws_(ioc_) {}

    // Connects and completes the handshake; "" on success, else the error.
    std::string connect(std::uint16_t port, const std::string& target = "/ws", const std::string& origin = "",
                        int receive_buffer = 0)
    {
        std::string error;
        bool done = false;
        auto& socket = beast::get_lowest_layer(ws_).socket();
        socket.open(tcp::v4());
        if (receive_buffer > 0) socket.set_option(asio::socket_base::receive_buffer_size(receive_buffer));
        const std::string host = "127.0.0.1:" + std::to_string(port);
        ws_.set_option(websocket::stream_base::decorator([origin](websocket::request_type& r) {
            if (!origin.empty()) r.set(http::field::origin, origin);
        }));
        beast::get_lowest_layer(ws_).async_connect(
            tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), [&](beast::error_code ec) {
                if (ec) {
                    error = "connect: " + ec.message();
                    done = true;
                    return;
                }
                ws_.async_handshake(host, target, [&](beast::error_code ec2) {
                    if (ec2) error = "handshake: " + ec2.message();
                    done = true;
                });
            });
        if (!run_until(ioc_, done, 10000ms, [&] { beast::get_lowest_layer(ws_).cancel(); })) return "timed out";
        ws_.read_message_max(64 * 1024 * 1024);
        return error;
    }

    // The next message, or nullopt (closed, error or timeout; see closed()).
    std::optional<std::string> read(std::chrono::milliseconds timeout = 10000ms)
    {
        if (closed_) return std::nullopt;
        bool done = false;
        beast::error_code error;
        ws_.async_read(buffer_, [&](beast::error_code ec, std::size_t) {
            error = ec;
            done = true;
        });
        if (!run_until(ioc_, done, timeout, [&] { beast::get_lowest_layer(ws_).cancel(); })) {
            closed_ = true; // a cancelled read leaves the stream unusable
            return std::nullopt;
        }
        if (error) {
            closed_ = true;
            close_code_ = ws_.reason().code;
            close_reason_ = std::string(ws_.reason().reason.c_str());
            return std::nullopt;
        }
        std::string m = beast::buffers_to_string(buffer_.data());
        buffer_.consume(buffer_.size());
        return m;
    }

    // The next message of `type` ("frame", "reply", ...), skipping others.
    std::optional<boost::json::object> next(const std::string& type, std::chrono::milliseconds timeout = 10000ms)
    {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (std::chrono::steady_clock::now() < deadline) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            auto m = read(std::max(left, 1ms));
            if (!m) return std::nullopt;
            boost::json::value v = boost::json::parse(*m);
            if (v.as_object().at("type").as_string() == type) return v.as_object();
        }
        return std::nullopt;
    }

    // The first frame that satisfies `condition`.
    std::optional<boost::json::object> frame_where(const std::function<bool(const boost::json::object&)>& condition,
                                                   std::chrono::milliseconds timeout = 20000ms)
    {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (std::chrono::steady_clock::now() < deadline) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            auto f = next("frame", std::max(left, 1ms));
            if (!f) return std::nullopt;
            if (condition(*f)) return f;
        }
        return std::nullopt;
    }

    bool send_text(const std::string& text) { return send(text, true); }
    bool send_binary(const std::string& bytes) { return send(bytes, false); }

    // Sends a command and returns its reply.
    std::optional<boost::json::object> command(const std::string& text)
    {
        boost::json::object m;
        m["type"] = "command";
        m["id"] = ++id_;
        m["text"] = text;
        if (!send_text(boost::json::serialize(m))) return std::nullopt;
        const auto deadline = std::chrono::steady_clock::now() + 10000ms;
        while (std::chrono::steady_clock::now() < deadline) {
            auto r = next("reply");
            if (!r) return std::nullopt;
            if (r->at("id").is_int64() && r->at("id").as_int64() == id_) return r;
        }
        return std::nullopt;
    }

    bool closed() const noexcept { return closed_; }
    std::uint16_t close_code() const noexcept { return close_code_; }
    const std::string& close_reason() const noexcept { return close_reason_; }

private:
    bool send(const std::string& data, bool text)
    {
        bool done = false;
        beast::error_code error;
        ws_.text(text);
        ws_.async_write(asio::buffer(data), [&](beast::error_code ec, std::size_t) {
            error = ec;
            done = true;
        });
        if (!run_until(ioc_, done, 10000ms, [&] { beast::get_lowest_layer(ws_).cancel(); })) return false;
        return !error;
    }

    asio::io_context ioc_;
    websocket::stream<beast::tcp_stream> ws_;
    beast::flat_buffer buffer_;
    bool closed_ = false;
    std::uint16_t close_code_ = 0;
    std::string close_reason_;
    std::int64_t id_ = 0;
};

inline double number(const boost::json::value& v)
{
    if (v.is_double()) return v.as_double();
    if (v.is_int64()) return static_cast<double>(v.as_int64());
    if (v.is_uint64()) return static_cast<double>(v.as_uint64());
    return 0;
}

inline std::uint64_t steps_of(const boost::json::object& frame)
{
    const auto& v = frame.at("steps");
    return v.is_uint64() ? v.as_uint64() : static_cast<std::uint64_t>(v.as_int64());
}

inline std::string str(const boost::json::value& v) { return std::string(v.as_string()); }

} // namespace simsync::web::test
