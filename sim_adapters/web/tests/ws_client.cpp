// The web console tests' HTTP and WebSocket clients (ws_client.hpp), compiled
// once for every test program that uses them: Boost.Beast's WebSocket and TLS
// templates are instantiated here only, and Boost.JSON's library is compiled
// here (boost/json/src.hpp), not in each test.

#include "ws_client.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <boost/json/src.hpp>

#include <array>
#include <type_traits>
#include <variant>

namespace simsync::web::test {

namespace beast = boost::beast;
namespace websocket = beast::websocket;

namespace {

// Runs `ioc` until `done` or the timeout; on a timeout, cancels and drains.
bool run_until(asio::io_context& ioc, const bool& done, std::chrono::milliseconds timeout,
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

} // namespace

// Opens `socket` bound to `route.source` if given, for a connection to `route.address`.
void open_from(tcp::socket& socket, const Route& route)
{
    const auto to = asio::ip::make_address(route.address);
    socket.open(to.is_v4() ? tcp::v4() : tcp::v6());
    if (!route.source.empty()) socket.bind(tcp::endpoint(asio::ip::make_address(route.source), 0));
}

// One HTTP request on a fresh connection (HTTPS with route.tls).
HttpResult http_request(std::uint16_t port, http::verb verb, const std::string& target, const std::string& host,
                        const Route& route)
{
    asio::io_context ioc;
    HttpResult result;
    bool done = false;
    beast::flat_buffer buffer;
    http::request<http::empty_body> req(verb, target, 11);
    req.set(http::field::host, host.empty() ? route.address + ":" + std::to_string(port) : host);
    http::response<http::string_body> res;
    auto exchange = [&](auto& stream) {
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
    };
    beast::tcp_stream plain(ioc);
    std::optional<beast::ssl_stream<beast::tcp_stream&>> tls;
    open_from(plain.socket(), route);
    if (route.tls != nullptr) tls.emplace(plain, *route.tls);
    plain.async_connect(tcp::endpoint(asio::ip::make_address(route.address), port), [&](beast::error_code ec) {
        if (ec) {
            done = true;
            return;
        }
        if (!tls) {
            exchange(plain);
            return;
        }
        tls->async_handshake(asio::ssl::stream_base::client, [&](beast::error_code hec) {
            if (hec) {
                done = true;
                return;
            }
            exchange(*tls);
        });
    });
    run_until(ioc, done, 10000ms, [&] { plain.cancel(); });
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
std::string raw_exchange(std::uint16_t port, const std::string& bytes, const Route& route)
{
    asio::io_context ioc;
    tcp::socket socket(ioc);
    open_from(socket, route);
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
    socket.async_connect(tcp::endpoint(asio::ip::make_address(route.address), port), [&](beast::error_code ec) {
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

class WsClient::Impl {
public:
    using Plain = websocket::stream<beast::tcp_stream>;
    using Tls = websocket::stream<beast::ssl_stream<beast::tcp_stream>>;

    // Connects, completes the handshakes and sends the hello; "" on success,
    // else the error.
    std::string connect(std::uint16_t port, const Connect& how)
    {
        if (how.route.tls != nullptr) {
            ws_.emplace<Tls>(ioc_, *how.route.tls);
        } else {
            ws_.emplace<Plain>(ioc_);
        }
        std::string error;
        bool done = false;
        with([&](auto& ws) {
            auto& socket = beast::get_lowest_layer(ws).socket();
            open_from(socket, how.route);
            if (how.receive_buffer > 0) socket.set_option(asio::socket_base::receive_buffer_size(how.receive_buffer));
            const std::string host = (how.route.address.find(':') != std::string::npos ? "[" + how.route.address + "]"
                                                                                       : how.route.address) +
                                     ":" + std::to_string(port);
            ws.set_option(websocket::stream_base::decorator([origin = how.origin](websocket::request_type& r) {
                if (!origin.empty()) r.set(http::field::origin, origin);
            }));
            auto upgrade = [&, host] {
                ws.async_handshake(host, how.target, [&](beast::error_code ec2) {
                    if (ec2) error = "handshake: " + ec2.message();
                    done = true;
                });
            };
            beast::get_lowest_layer(ws).async_connect(
                tcp::endpoint(asio::ip::make_address(how.route.address), port), [&, upgrade](beast::error_code ec) {
                    if (ec) {
                        error = "connect: " + ec.message();
                        done = true;
                        return;
                    }
                    if constexpr (std::is_same_v<std::decay_t<decltype(ws)>, Tls>) {
                        ws.next_layer().async_handshake(asio::ssl::stream_base::client, [&, upgrade](beast::error_code hec) {
                            if (hec) {
                                error = "tls: " + hec.message();
                                done = true;
                                return;
                            }
                            upgrade();
                        });
                    } else {
                        upgrade();
                    }
                });
        });
        if (!run_until(ioc_, done, 10000ms, [&] { with([](auto& ws) { beast::get_lowest_layer(ws).cancel(); }); })) {
            return "timed out";
        }
        with([](auto& ws) { ws.read_message_max(64 * 1024 * 1024); });
        if (error.empty() && how.hello) {
            boost::json::object hello{{"type", "hello"}};
            if (!how.hello->empty()) hello["token"] = *how.hello;
            if (!send_text(boost::json::serialize(hello))) error = "hello: not sent";
        }
        return error;
    }

    // The next message, or nullopt (closed, error or timeout; see closed()).
    std::optional<std::string> read(std::chrono::milliseconds timeout)
    {
        if (closed_) return std::nullopt;
        bool done = false;
        beast::error_code error;
        with([&](auto& ws) {
            ws.async_read(buffer_, [&](beast::error_code ec, std::size_t) {
                error = ec;
                done = true;
            });
        });
        if (!run_until(ioc_, done, timeout, [&] { with([](auto& ws) { beast::get_lowest_layer(ws).cancel(); }); })) {
            closed_ = true; // a cancelled read leaves the stream unusable
            return std::nullopt;
        }
        if (error) {
            closed_ = true;
            with([&](auto& ws) {
                close_code_ = ws.reason().code;
                close_reason_ = std::string(ws.reason().reason.c_str());
            });
            return std::nullopt;
        }
        std::string m = beast::buffers_to_string(buffer_.data());
        buffer_.consume(buffer_.size());
        return m;
    }

    // The next message of `type` ("frame", "reply", ...), skipping others.
    std::optional<boost::json::object> next(const std::string& type, std::chrono::milliseconds timeout)
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
                                                   std::chrono::milliseconds timeout)
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
            auto r = next("reply", 10000ms);
            if (!r) return std::nullopt;
            if (r->at("id").is_int64() && r->at("id").as_int64() == id_) return r;
        }
        return std::nullopt;
    }

    bool closed() const noexcept { return closed_; }
    std::uint16_t close_code() const noexcept { return close_code_; }
    const std::string& close_reason() const noexcept { return close_reason_; }

    bool send(const std::string& data, bool text)
    {
        bool done = false;
        beast::error_code error;
        with([&](auto& ws) {
            ws.text(text);
            ws.async_write(asio::buffer(data), [&](beast::error_code ec, std::size_t) {
                error = ec;
                done = true;
            });
        });
        if (!run_until(ioc_, done, 10000ms, [&] { with([](auto& ws) { beast::get_lowest_layer(ws).cancel(); }); })) {
            return false;
        }
        return !error;
    }

    template <class F>
    void with(F&& f)
    {
        if (auto* t = std::get_if<Tls>(&ws_)) {
            f(*t);
        } else {
            f(std::get<Plain>(ws_));
        }
    }

    asio::io_context ioc_;
    std::variant<std::monostate, Plain, Tls> ws_;
    beast::flat_buffer buffer_;
    bool closed_ = false;
    std::uint16_t close_code_ = 0;
    std::string close_reason_;
    std::int64_t id_ = 0;
};

WsClient::WsClient() : impl_(std::make_unique<Impl>()) {}
WsClient::~WsClient() = default;
std::string WsClient::connect(std::uint16_t port, const Connect& how) { return impl_->connect(port, how); }
std::optional<std::string> WsClient::read(std::chrono::milliseconds timeout) { return impl_->read(timeout); }
std::optional<boost::json::object> WsClient::next(const std::string& type, std::chrono::milliseconds timeout)
{
    return impl_->next(type, timeout);
}
std::optional<boost::json::object> WsClient::frame_where(const std::function<bool(const boost::json::object&)>& condition,
                                                         std::chrono::milliseconds timeout)
{
    return impl_->frame_where(condition, timeout);
}
bool WsClient::send_text(const std::string& text) { return impl_->send_text(text); }
bool WsClient::send_binary(const std::string& bytes) { return impl_->send_binary(bytes); }
std::optional<boost::json::object> WsClient::command(const std::string& text) { return impl_->command(text); }
bool WsClient::closed() const noexcept { return impl_->closed(); }
std::uint16_t WsClient::close_code() const noexcept { return impl_->close_code(); }
const std::string& WsClient::close_reason() const noexcept { return impl_->close_reason(); }

double number(const boost::json::value& v)
{
    if (v.is_double()) return v.as_double();
    if (v.is_int64()) return static_cast<double>(v.as_int64());
    if (v.is_uint64()) return static_cast<double>(v.as_uint64());
    return 0;
}

std::uint64_t steps_of(const boost::json::object& frame)
{
    const auto& v = frame.at("steps");
    return v.is_uint64() ? v.as_uint64() : static_cast<std::uint64_t>(v.as_int64());
}

std::string str(const boost::json::value& v) { return std::string(v.as_string()); }

} // namespace simsync::web::test
