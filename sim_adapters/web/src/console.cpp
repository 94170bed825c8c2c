#include <simsync/core/error.hpp>
#include <simsync/operator/operator_commands.hpp>
#include <simsync/web/console.hpp>

#include "json_writer.hpp"
#include "page_assets.hpp"
#include "protocol.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <map>
#include <type_traits>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <vector>

namespace simsync::web {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using detail::JsonWriter;

namespace {

using Message = std::shared_ptr<const std::string>;
using Clock = asio::steady_timer::clock_type;
using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

constexpr std::size_t kHttpHeaderLimit = 8192;
// A WebSocket close handshake: the peer's answer is waited for this long.
constexpr auto kCloseTimeout = std::chrono::seconds(2);
// After a failed accept, the wait before the next: doubled at each failure in a
// row, back to none after a success.
constexpr auto kAcceptRetryFirst = std::chrono::milliseconds(5);
constexpr auto kAcceptRetryLongest = std::chrono::seconds(1);
// Spans per track in one message: enough for a few seconds of a 1 kHz accessor.
constexpr std::size_t kMaxSpansPerTrack = 500;

double seconds(WallClock::duration d) { return std::chrono::duration<double>(d).count(); }
double seconds(SimTime t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

std::string random_token()
{
    std::random_device device;
    char buf[33];
    for (int i = 0; i < 4; ++i) std::snprintf(buf + 8 * i, 9, "%08x", static_cast<unsigned>(device()));
    return std::string(buf, 32);
}

bool equal_in_constant_time(std::string_view a, std::string_view b)
{
    if (a.size() != b.size()) return false;
    unsigned char diff = 0;
    for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
    return diff == 0;
}

// The host name of a Host header value ("127.0.0.1:8080", "[::1]:80", "localhost").
std::string_view host_name(std::string_view host)
{
    if (!host.empty() && host.front() == '[') {
        const auto close = host.find(']');
        return close == std::string_view::npos ? std::string_view{} : host.substr(1, close - 1);
    }
    return host.substr(0, host.find(':'));
}

// An IPv4-mapped IPv6 address as the IPv4 address it is (a dual-stack socket
// reached over IPv4), so that one peer is counted once and compared as written.
asio::ip::address unmapped(const asio::ip::address& a)
{
    if (a.is_v6() && a.to_v6().is_v4_mapped()) return asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6());
    return a;
}

// A close reason must be at most 123 bytes; keep it ASCII so it is valid UTF-8.
websocket::close_reason close_reason(websocket::close_code code, std::string_view why)
{
    std::string reason;
    for (const char c : why.substr(0, 120)) reason += (static_cast<unsigned char>(c) < 0x80 && c >= 0x20) ? c : '?';
    return websocket::close_reason(code, reason);
}

} // namespace

// ---------------------------------------------------------------- the console

struct WebConsole::Impl {
    Impl(SimSyncHandler& h, WebConsoleSources s, WebConsoleConfig c);

    // Sampler thread.
    void sampler_loop();
    // Any thread: the next frame as soon as the sampler may (a page connected,
    // a HandlerEvent).
    void frame_soon();
    void tick();
    bool read_scene();
    std::string build_frame(const Snapshot& snap, WallTime wall, std::optional<double> achieved,
                            std::optional<double> target, double measured, double grant_rate,
                            const std::vector<GrantTimeline::TrackSpans>& fresh);
    std::string build_history(WallTime wall) const;

    // Network thread (everything below touches io-thread state only).
    void accept();
    bool host_allowed(std::string_view name, const asio::ip::address& reached) const;
    bool tls() const { return ssl.has_value(); }
    void broadcast(Message history, Message frame);
    void shutdown_network();
    std::string welcome(bool control) const;
    std::string handle_command(std::string_view text, std::optional<std::int64_t> id, bool control);

    SimSyncHandler& handler;
    WebConsoleSources sources;
    WebConsoleConfig config;
    std::string token;
    bool token_required = false;
    bool loopback = true;
    Endpoint bound;
    WallTime origin = WallClock::now();

    // Counters (any thread).
    std::atomic<std::uint64_t> frames{0}, frames_sent{0}, frames_dropped{0}, accepted{0}, open{0}, refused{0},
        applied{0}, rejected{0}, closed_bad{0}, scene_reads{0}, scene_misses{0}, accept_failures{0},
        connections_refused{0}, handshakes_timed_out{0}, viewers_idled_out{0}, hellos_refused{0};

    // Sampler state (sampler thread only, after construction).
    std::optional<Accessor> accessor;
    SceneFrame scene_frame;
    std::optional<SimTime> scene_time;
    std::string scene_error;
    GrantTimeline::Cursor timeline_cursor;
    struct RecentTrack {
        std::string name;
        std::string category;
        std::deque<GrantSpan> spans; // within the timeline window
    };
    std::vector<RecentTrack> recent; // for the history message of a new page
    struct RatePoint {
        WallTime wall;
        SimTime sim;
        std::uint64_t grants;
    };
    std::deque<RatePoint> rate_points; // the last second
    struct HistoryPoint {
        WallTime wall;
        std::optional<double> achieved;
        std::optional<double> target;
    };
    std::deque<HistoryPoint> history;
    std::uint64_t sequence = 0;
    std::atomic<bool> history_wanted{false}; // a page connected and waits for its history

    std::mutex stop_mutex;
    std::condition_variable stop_cv;
    bool stopping = false; // guarded by stop_mutex
    bool changed = false;  // frame_soon() since the last frame; guarded by stop_mutex
    Subscription events;   // pause, resume, step, target reached: a frame at once
    bool stopped = false;  // stop() ran; guarded by stop_mutex
    mutable std::mutex failure_mutex;
    std::exception_ptr failure;
    std::thread sampler;

    // Network state (network thread only, after construction).
    // A connection in any phase, as shutdown and the frames see it.
    struct Connection {
        virtual ~Connection() = default;
        virtual void abort() = 0;
        virtual void offer_frame(const Message& frame) = 0;
        virtual void offer_history(const Message& history) = 0;
    };
    struct Admission;
    template <class Stream>
    struct Session;
    template <class Stream>
    struct HttpSession;
    std::vector<std::shared_ptr<Connection>> sessions; // WebSocket connections past their hello
    std::vector<std::weak_ptr<Connection>> live;       // every connection, for shutdown
    std::size_t viewers = 0;                           // sessions without control
    std::size_t pending = 0;                           // connections before their hello (Admission)
    std::map<asio::ip::address, std::size_t> per_address; // anonymous connections per peer (Admission)
    std::optional<asio::ssl::context> ssl;             // with TLS
    std::optional<asio::io_context> ioc;
    std::optional<tcp::acceptor> acceptor;
    std::optional<asio::steady_timer> accept_retry;
    asio::steady_timer::duration accept_delay{};
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
    std::thread network;
    std::future<void> network_done;
};

// ------------------------------------------------------------- admission

// What one accepted connection holds against the limits, from accept until it
// is gone: a pending slot until its hello, and its peer address's count while
// it is anonymous (not a controller). Network thread only; released by its
// destructor, also when stop() destroys leftover handlers.
struct WebConsole::Impl::Admission {
    Admission(Impl& owner, asio::ip::address address) : impl(owner), peer(address)
    {
        ++impl.pending;
        ++impl.per_address[peer];
    }
    Admission(const Admission&) = delete;
    Admission& operator=(const Admission&) = delete;
    ~Admission()
    {
        leave_pending();
        authenticated();
    }
    void leave_pending()
    {
        if (!pending) return;
        pending = false;
        --impl.pending;
    }
    // A controller no longer counts against its address: a flood from the
    // operator's own address must not close the operator's open connection.
    void authenticated()
    {
        if (!anonymous) return;
        anonymous = false;
        const auto it = impl.per_address.find(peer);
        if (--it->second == 0) impl.per_address.erase(it);
    }

    Impl& impl;
    asio::ip::address peer;
    bool pending = true;
    bool anonymous = true;
};

// ------------------------------------------------------------ WebSocket session

template <class Stream>
struct WebConsole::Impl::Session final : Connection, std::enable_shared_from_this<Session<Stream>> {
    Session(Impl& owner, Stream stream, std::unique_ptr<Admission> admitted, Clock::time_point handshake_deadline)
        : impl(owner), ws(std::move(stream)), timer(*owner.ioc), admission(std::move(admitted)),
          deadline(handshake_deadline)
    {
    }

    void start(http::request<http::empty_body> request)
    {
        // The WebSocket layer keeps its own time from here on (Beast's rule for
        // a websocket::stream over a tcp_stream).
        beast::get_lowest_layer(ws).expires_never();
        auto timeouts = websocket::stream_base::timeout::suggested(beast::role_type::server);
        timeouts.handshake_timeout = std::max<Clock::duration>(deadline - Clock::now(), std::chrono::milliseconds(1));
        timeouts.keep_alive_pings = true; // a controller that vanished is found
        ws.set_option(timeouts);
        ws.set_option(websocket::stream_base::decorator(
            [](websocket::response_type& r) { r.set(http::field::server, "simsync-web"); }));
        ws.read_message_max(impl.config.max_message_bytes);
        ws.auto_fragment(false);
        // Until the hello, the connection lives at most until the deadline
        // counted from its accept.
        arm(deadline);
        ws.async_accept(request, [self = this->shared_from_this()](beast::error_code ec) { self->on_accept(ec); });
    }

    void arm(Clock::time_point when)
    {
        timer.expires_at(when);
        timer.async_wait([self = this->shared_from_this()](beast::error_code ec) {
            if (!ec) self->on_timer();
        });
    }

    void on_timer()
    {
        if (closing) {
            abort(); // the close handshake did not finish in time
        } else if (!helloed) {
            ++impl.handshakes_timed_out;
            abort();
        } else if (!control) {
            ++impl.viewers_idled_out;
            close(close_reason(websocket::close_code::policy_error,
                               "idle: a viewer must send a message (a ping) at least every " +
                                   std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                                      impl.config.viewer_idle_timeout)
                                                      .count()) +
                                   " s"));
        }
    }

    void on_accept(beast::error_code ec)
    {
        if (ec) {
            timer.cancel();
            return; // the handshake failed: nothing was registered
        }
        read();
    }

    // The first message decides what the connection is: a controller (the
    // token, or none needed), a viewer, or nothing (a wrong token, no slot).
    void on_hello(const detail::IncomingCommand& hello)
    {
        if (impl.token_required && !hello.token.empty() && !equal_in_constant_time(hello.token, impl.token)) {
            ++impl.hellos_refused;
            close(close_reason(websocket::close_code::policy_error, "wrong token"));
            return;
        }
        control = !impl.token_required || !hello.token.empty();
        const std::size_t viewer_slots = impl.config.max_connections - impl.config.reserved_for_control;
        if (impl.sessions.size() >= impl.config.max_connections || (!control && impl.viewers >= viewer_slots)) {
            ++impl.hellos_refused;
            close(close_reason(websocket::close_code::try_again_later,
                               control ? "the console is full"
                                       : "no viewer slot free (" + std::to_string(viewer_slots) +
                                             " for viewers; the others are kept for the token)"));
            return;
        }
        helloed = true;
        admission->leave_pending();
        if (control) admission->authenticated();
        ++impl.accepted;
        ++impl.open;
        registered = true;
        if (!control) ++impl.viewers;
        impl.sessions.push_back(this->shared_from_this());
        timer.cancel();
        if (!control) arm(Clock::now() + impl.config.viewer_idle_timeout);
        // A close handshake needs its own time, not what was left of the deadline.
        auto timeouts = websocket::stream_base::timeout::suggested(beast::role_type::server);
        timeouts.keep_alive_pings = true;
        timeouts.handshake_timeout = kCloseTimeout;
        ws.set_option(timeouts);
        queue_reply(std::make_shared<const std::string>(impl.welcome(control)));
        impl.history_wanted = true; // the sampler sends the history with its next frame ...
        impl.frame_soon();          // ... which it makes now
    }

    void read()
    {
        ws.async_read(in, [self = this->shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
    }

    void on_read(beast::error_code ec)
    {
        if (ec) {
            // message_too_big: Beast has already failed the connection (1009).
            if (ec == websocket::error::message_too_big) ++impl.closed_bad;
            finish();
            return;
        }
        if (!ws.got_text()) {
            close_for("binary messages are not accepted");
            return;
        }
        const std::string message = beast::buffers_to_string(in.data());
        in.consume(in.size());
        std::string error;
        const auto incoming = detail::parse_incoming(message, error);
        if (!incoming) {
            close_for("malformed message: " + error);
            return;
        }
        using Kind = detail::IncomingCommand::Kind;
        if (!helloed) {
            if (incoming->kind != Kind::hello) {
                close_for("the first message must be a hello");
                return;
            }
            on_hello(*incoming);
        } else if (incoming->kind == Kind::hello) {
            close_for("hello given twice");
            return;
        } else {
            if (!control) arm(Clock::now() + impl.config.viewer_idle_timeout);
            if (incoming->kind == Kind::command) {
                queue_reply(std::make_shared<const std::string>(
                    impl.handle_command(incoming->text, incoming->id, control)));
            }
        }
        if (!closing) read();
    }

    // Closes this connection for a bad message; nothing else is affected.
    void close_for(const std::string& why)
    {
        ++impl.closed_bad;
        close(close_reason(websocket::close_code::policy_error, why));
    }

    void close(const websocket::close_reason& reason)
    {
        if (closing) return;
        closing = true;
        arm(Clock::now() + 2 * kCloseTimeout); // a peer that never answers the close
        ws.async_close(reason, [self = this->shared_from_this()](beast::error_code) { self->finish(); });
    }

    void queue_reply(Message m)
    {
        if (closing) return;
        if (replies.size() >= impl.config.max_queued_replies) {
            close_for("too many unread replies");
            return;
        }
        replies.push_back(std::move(m));
        write_next();
    }

    // The newest frame replaces one still waiting: a slow reader loses frames.
    void offer_frame(const Message& frame) override
    {
        if (closing || !has_history) return;
        if (pending_frame) ++impl.frames_dropped;
        pending_frame = frame;
        write_next();
    }

    void offer_history(const Message& history) override
    {
        if (closing || has_history) return;
        has_history = true;
        queue_reply(history);
    }

    void write_next()
    {
        if (writing || closing) return;
        Message m;
        bool is_frame = false;
        if (!replies.empty()) {
            m = std::move(replies.front());
            replies.pop_front();
        } else if (pending_frame) {
            m = std::move(pending_frame);
            pending_frame.reset();
            is_frame = true;
        } else {
            return;
        }
        writing = true;
        ws.text(true);
        ws.async_write(asio::buffer(*m), [self = this->shared_from_this(), m, is_frame](beast::error_code ec, std::size_t) {
            self->writing = false;
            if (ec) {
                // The peer went away mid-write: end the read too.
                beast::error_code ignored;
                beast::get_lowest_layer(self->ws).socket().close(ignored);
                return;
            }
            if (is_frame) ++self->impl.frames_sent;
            self->write_next();
        });
    }

    void finish()
    {
        timer.cancel();
        if (!registered) return;
        registered = false;
        --impl.open;
        if (!control) --impl.viewers;
        auto& s = impl.sessions;
        const auto me = this->shared_from_this();
        s.erase(std::remove_if(s.begin(), s.end(), [&](const auto& p) { return p == me; }), s.end());
    }

    void abort() override
    {
        closing = true;
        timer.cancel();
        beast::error_code ignored;
        beast::get_lowest_layer(ws).socket().close(ignored);
    }

    Impl& impl;
    websocket::stream<Stream> ws;
    asio::steady_timer timer; // the handshake deadline, then a viewer's idle limit
    std::unique_ptr<Admission> admission;
    Clock::time_point deadline;
    beast::flat_buffer in;
    bool control = false;
    bool helloed = false;
    bool registered = false;
    bool closing = false;
    bool writing = false;
    bool has_history = false;
    std::deque<Message> replies;
    Message pending_frame;
};

// ----------------------------------------------------------------- HTTP session

namespace {

const char* const kSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

} // namespace

// A connection before its WebSocket: the TLS handshake (with TLS), then HTTP
// requests: serves the page, or hands the stream to a Session on a WebSocket
// upgrade to /ws.
template <class Stream>
struct WebConsole::Impl::HttpSession final : Connection, std::enable_shared_from_this<HttpSession<Stream>> {
    HttpSession(Impl& owner, Stream s, std::unique_ptr<Admission> admitted, Clock::time_point handshake_deadline)
        : impl(owner), stream(std::move(s)), admission(std::move(admitted)), deadline(handshake_deadline)
    {
    }

    void start()
    {
        beast::get_lowest_layer(stream).expires_at(deadline);
        if constexpr (std::is_same_v<Stream, TlsStream>) {
            // A plain HTTP request to the TLS port is answered in plain text
            // saying so, rather than with a TLS alert the user cannot read.
            beast::async_detect_ssl(beast::get_lowest_layer(stream), buffer,
                                    [self = this->shared_from_this()](beast::error_code ec, bool tls) {
                                        self->on_detect(ec, tls);
                                    });
        } else {
            read();
        }
    }

    void on_detect(beast::error_code ec, bool tls)
    {
        if (ec) {
            if (ec == beast::error::timeout) ++impl.handshakes_timed_out;
            close_stream();
            return;
        }
        if (!tls) {
            ++impl.refused;
            const std::string body = "this console serves HTTPS only: use https://, not http://\n";
            auto text = std::make_shared<std::string>(
                "HTTP/1.1 400 Bad Request\r\nServer: simsync-web\r\nContent-Type: text/plain; charset=utf-8\r\n"
                "Connection: close\r\nContent-Length: " +
                std::to_string(body.size()) + "\r\n\r\n" + body);
            asio::async_write(beast::get_lowest_layer(stream), asio::buffer(*text),
                              [self = this->shared_from_this(), text](beast::error_code, std::size_t) {
                                  self->close_stream();
                              });
            return;
        }
        if constexpr (std::is_same_v<Stream, TlsStream>) {
            // The default argument: Boost 1.81 constrains this handler as if it
            // took an error code only, though it is called with two.
            stream.async_handshake(asio::ssl::stream_base::server, buffer.data(),
                                   [self = this->shared_from_this()](beast::error_code hec, std::size_t used = 0) {
                                       if (hec) {
                                           if (hec == beast::error::timeout) ++self->impl.handshakes_timed_out;
                                           self->close_stream();
                                           return;
                                       }
                                       self->buffer.consume(used);
                                       self->read();
                                   });
        }
    }

    void read()
    {
        parser.emplace();
        parser->header_limit(kHttpHeaderLimit);
        parser->body_limit(0);
        // The first request counts from the accept; each later one on a kept
        // connection gets the same time again.
        beast::get_lowest_layer(stream).expires_at(first_request ? deadline
                                                                 : Clock::now() + impl.config.handshake_timeout);
        first_request = false;
        http::async_read(stream, buffer, *parser,
                         [self = this->shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
    }

    void on_read(beast::error_code ec);
    void respond(http::status status, std::string_view type, std::string_view body, bool keep_alive);
    void refuse(http::status status, std::string_view why);

    void close_stream()
    {
        if (handed_over) return;
        beast::error_code ignored;
        beast::get_lowest_layer(stream).socket().shutdown(tcp::socket::shutdown_send, ignored);
        beast::get_lowest_layer(stream).close();
    }

    void abort() override
    {
        if (handed_over) return;
        beast::get_lowest_layer(stream).close();
    }
    void offer_frame(const Message&) override {}
    void offer_history(const Message&) override {}

    Impl& impl;
    Stream stream;
    std::unique_ptr<Admission> admission;
    Clock::time_point deadline;
    beast::flat_buffer buffer;
    std::optional<http::request_parser<http::empty_body>> parser;
    bool first_request = true;
    bool handed_over = false; // the stream now belongs to a Session
};

template <class Stream>
void WebConsole::Impl::HttpSession<Stream>::on_read(beast::error_code ec)
{
    if (ec == beast::error::timeout) ++impl.handshakes_timed_out;
    if (ec == http::error::end_of_stream || ec == asio::error::operation_aborted || ec == beast::error::timeout ||
        ec == asio::error::connection_reset || ec == asio::error::eof || ec == asio::ssl::error::stream_truncated) {
        close_stream();
        return;
    }
    if (ec) {
        refuse(http::status::bad_request, "bad request: " + ec.message());
        return;
    }
    const http::request<http::empty_body>& req = parser->get();
    const std::string_view target(req.target().data(), req.target().size());
    const std::string_view path = target.substr(0, target.find('?'));
    const std::string_view host(req[http::field::host].data(), req[http::field::host].size());

    // A Host that names neither the address this connection reached nor an
    // allowed name is a page of another site that reached us by DNS
    // rebinding: refuse, on every interface.
    beast::error_code local_ec;
    const auto local = beast::get_lowest_layer(stream).socket().local_endpoint(local_ec);
    if (local_ec || !impl.host_allowed(host_name(host), unmapped(local.address()))) {
        refuse(http::status::forbidden, "this console does not answer to the host name '" +
                                            std::string(host_name(host).substr(0, 100)) +
                                            "' (allowed: the address it listens on, and its allowed hosts)");
        return;
    }
    if (websocket::is_upgrade(req)) {
        if (path != "/ws") {
            refuse(http::status::not_found, "no WebSocket here (use /ws)");
            return;
        }
        if (path.size() != target.size()) {
            refuse(http::status::bad_request, "no query on /ws: the token goes in the first WebSocket message, "
                                              "never in a URL");
            return;
        }
        // A page of another origin must not drive the console (cross-site
        // WebSocket hijacking); raw clients send no Origin.
        const auto origin = req.find(http::field::origin);
        if (origin != req.end()) {
            const std::string_view o(origin->value().data(), origin->value().size());
            if (o != std::string(impl.tls() ? "https://" : "http://") + std::string(host)) {
                refuse(http::status::forbidden, "WebSocket from another origin refused");
                return;
            }
        }
        if (impl.sessions.size() >= impl.config.max_connections) {
            refuse(http::status::service_unavailable, "too many connections");
            return;
        }
        handed_over = true;
        auto session = std::make_shared<Session<Stream>>(impl, std::move(stream), std::move(admission), deadline);
        impl.live.push_back(session);
        session->start(parser->release());
        return;
    }
    if (req.method() != http::verb::get && req.method() != http::verb::head) {
        refuse(http::status::method_not_allowed, "only GET");
        return;
    }
    const detail::PageAsset* asset = detail::find_page_asset(path == "/index.html" ? "/" : path);
    if (asset == nullptr) {
        respond(http::status::not_found, "text/plain; charset=utf-8", "not found\n", req.keep_alive());
        return;
    }
    respond(http::status::ok, asset->content_type,
            std::string_view(reinterpret_cast<const char*>(asset->data), asset->size), req.keep_alive());
}

template <class Stream>
void WebConsole::Impl::HttpSession<Stream>::respond(http::status status, std::string_view type, std::string_view body,
                                                   bool keep_alive)
{
    auto res = std::make_shared<http::response<http::string_body>>(status, 11);
    res->set(http::field::server, "simsync-web");
    res->set(http::field::content_type, type);
    res->set(http::field::cache_control, "no-store");
    res->set("X-Content-Type-Options", "nosniff");
    res->set("Referrer-Policy", "no-referrer");
    res->set("Content-Security-Policy", kSecurityPolicy);
    if (impl.tls()) res->set(http::field::strict_transport_security, "max-age=31536000");
    res->keep_alive(keep_alive);
    if (parser && parser->get().method() == http::verb::head) {
        res->content_length(body.size());
    } else {
        res->body() = std::string(body);
        res->prepare_payload();
    }
    http::async_write(stream, *res, [self = this->shared_from_this(), res, keep_alive](beast::error_code ec, std::size_t) {
        if (!ec && keep_alive) {
            self->read();
            return;
        }
        self->close_stream();
    });
}

template <class Stream>
void WebConsole::Impl::HttpSession<Stream>::refuse(http::status status, std::string_view why)
{
    ++impl.refused;
    respond(status, "text/plain; charset=utf-8", std::string(why) + "\n", false);
}

// ----------------------------------------------------------- the console itself

WebConsole::Impl::Impl(SimSyncHandler& h, WebConsoleSources s, WebConsoleConfig c)
    : handler(h), sources(s), config(std::move(c))
{
    auto bad = [](const std::string& what) { throw Error(errc::invalid_argument, "WebConsoleConfig: " + what); };
    if (config.frame_period <= WallClock::duration::zero()) bad("frame_period must be > 0");
    if (config.max_message_bytes < 64) {
        bad("max_message_bytes must be >= 64, got " + std::to_string(config.max_message_bytes));
    }
    if (config.max_connections == 0) bad("max_connections must be > 0");
    if (config.reserved_for_control > config.max_connections) {
        bad("reserved_for_control (" + std::to_string(config.reserved_for_control) +
            ") must be at most max_connections (" + std::to_string(config.max_connections) + ")");
    }
    if (config.max_per_address == 0) bad("max_per_address must be > 0");
    if (config.max_pending == 0) bad("max_pending must be > 0");
    if (config.handshake_timeout <= WallClock::duration::zero()) bad("handshake_timeout must be > 0");
    if (config.viewer_idle_timeout <= WallClock::duration::zero()) bad("viewer_idle_timeout must be > 0");
    if (config.max_queued_replies == 0) bad("max_queued_replies must be > 0");
    if (config.timeline_window <= WallClock::duration::zero()) bad("timeline_window must be > 0");
    if (config.history_window <= WallClock::duration::zero()) bad("history_window must be > 0");
    if (sources.scene != nullptr && config.accessor_name.empty()) bad("accessor_name must not be empty");
    if (!config.token.empty()) {
        for (const char ch : config.token) {
            if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_') {
                bad("token may hold letters, digits, '-' and '_' only");
            }
        }
        if (config.token.size() < kMinTokenLength) {
            bad("token must be at least " + std::to_string(kMinTokenLength) + " characters (128 bits as hex), got " +
                std::to_string(config.token.size()));
        }
    }
    for (const std::string& name : config.allowed_hosts) {
        if (name.empty() || name.find_first_of(" /:[]@") != std::string::npos) {
            bad("allowed_hosts: '" + name + "' is not a host name (no port, no scheme)");
        }
    }
    if (config.tls_certificate_file.empty() != config.tls_private_key_file.empty()) {
        bad(config.tls_certificate_file.empty() ? "tls_private_key_file is given without tls_certificate_file"
                                                : "tls_certificate_file is given without tls_private_key_file");
    }

    loopback = is_loopback(config.endpoint.host); // throws for a host that is not an address
    if (!loopback && config.tls_certificate_file.empty() && !config.allow_insecure) {
        bad("serving on " + config.endpoint.host +
            ", which is not a loopback address, needs TLS (a certificate and its private key) or an explicit "
            "allow_insecure: otherwise the control token and every command cross the network in clear");
    }
    if (!config.tls_certificate_file.empty()) {
        ssl.emplace(asio::ssl::context::tls_server);
        ssl->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                         asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                         asio::ssl::context::no_tlsv1_1 | asio::ssl::context::single_dh_use);
        beast::error_code ec;
        ssl->use_certificate_chain_file(config.tls_certificate_file, ec);
        if (ec) bad("tls_certificate_file '" + config.tls_certificate_file + "': " + ec.message());
        ssl->use_private_key_file(config.tls_private_key_file, asio::ssl::context::pem, ec);
        if (ec) bad("tls_private_key_file '" + config.tls_private_key_file + "': " + ec.message());
        if (SSL_CTX_check_private_key(ssl->native_handle()) != 1) {
            bad("tls_private_key_file '" + config.tls_private_key_file + "' is not the key of '" +
                config.tls_certificate_file + "'");
        }
    }
    token_required = config.require_token || !loopback;
    token = token_required ? (config.token.empty() ? random_token() : config.token) : std::string();

    ioc.emplace(1);
    acceptor.emplace(*ioc);
    accept_retry.emplace(*ioc);
    const std::string host = config.endpoint.host == "localhost" ? "127.0.0.1" : config.endpoint.host;
    const tcp::endpoint where(asio::ip::make_address(host), config.endpoint.port);
    beast::error_code ec;
    acceptor->open(where.protocol(), ec);
    if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor->bind(where, ec);
    if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
        throw Error(errc::invalid_state, "web console: cannot listen on " + config.endpoint.host + ":" +
                                             std::to_string(config.endpoint.port) + ": " + ec.message());
    }
    bound.host = config.endpoint.host;
    bound.port = acceptor->local_endpoint().port();

    if (sources.scene != nullptr) {
        // Free: holds time back only while it asks or holds. Highest priority:
        // at one instant it waits for no lockstep accessor that has not asked
        // yet, only for a holder of an exclusive access. Shared: it only reads.
        accessor = handler.register_accessor(
            config.accessor_name, {.kind = AccessorKind::free, .mode = AccessMode::shared, .priority = INT_MAX});
    }

    // A change of state (an operator's pause, a step's target reached) is shown
    // at once instead of at the next frame: the event only wakes the sampler,
    // which does the reading on its own thread as always.
    events = handler.subscribe([this](const HandlerEvent&) { frame_soon(); });

    work.emplace(ioc->get_executor());
    accept();
    std::promise<void> done;
    network_done = done.get_future();
    network = std::thread([this, done = std::move(done)]() mutable {
        ioc->run();
        done.set_value();
    });
    sampler = std::thread([this] { sampler_loop(); });
}

bool WebConsole::Impl::host_allowed(std::string_view name, const asio::ip::address& reached) const
{
    if (name.empty()) return false;
    boost::system::error_code ec;
    const auto literal = asio::ip::make_address(std::string(name), ec);
    if (!ec) return unmapped(literal) == reached;
    std::string lower(name);
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (lower == "localhost") return reached.is_loopback();
    for (const std::string& allowed : config.allowed_hosts) {
        if (allowed.size() == lower.size() &&
            std::equal(allowed.begin(), allowed.end(), lower.begin(), [](char a, char b) {
                return std::tolower(static_cast<unsigned char>(a)) == b;
            })) {
            return true;
        }
    }
    return false;
}

void WebConsole::Impl::accept()
{
    acceptor->async_accept([this](beast::error_code ec, tcp::socket socket) {
        if (ec == asio::error::operation_aborted || !acceptor->is_open()) return;
        if (ec) {
            // Out of descriptors (EMFILE, ENFILE) or of kernel memory: the
            // connection stays in the listen queue, so accepting again at once
            // fails again at once. Wait, longer after each failure in a row;
            // the queue is served when descriptors are free again.
            ++accept_failures;
            accept_delay = accept_delay == asio::steady_timer::duration::zero()
                               ? asio::steady_timer::duration(kAcceptRetryFirst)
                               : std::min<asio::steady_timer::duration>(2 * accept_delay, kAcceptRetryLongest);
            accept_retry->expires_after(accept_delay);
            accept_retry->async_wait([this](beast::error_code wait_ec) {
                if (!wait_ec && acceptor->is_open()) accept();
            });
            return;
        }
        accept_delay = asio::steady_timer::duration::zero();
        live.erase(std::remove_if(live.begin(), live.end(), [](const auto& w) { return w.expired(); }), live.end());
        beast::error_code peer_ec;
        const auto peer = socket.remote_endpoint(peer_ec);
        const auto address = unmapped(peer.address());
        const auto from_there = per_address.find(address);
        if (peer_ec || pending >= config.max_pending ||
            (from_there != per_address.end() && from_there->second >= config.max_per_address)) {
            // Closed at once, before a byte is read: a flood costs us a
            // descriptor for an instant, and the operator's next connection
            // finds room as soon as the flood's own connections time out.
            ++connections_refused;
            beast::error_code ignored;
            socket.close(ignored);
        } else {
            auto admitted = std::make_unique<Admission>(*this, address);
            const auto deadline = Clock::now() + config.handshake_timeout;
            if (ssl) {
                auto session = std::make_shared<HttpSession<TlsStream>>(*this, TlsStream(std::move(socket), *ssl),
                                                                        std::move(admitted), deadline);
                live.push_back(session);
                session->start();
            } else {
                auto session = std::make_shared<HttpSession<PlainStream>>(*this, PlainStream(std::move(socket)),
                                                                          std::move(admitted), deadline);
                live.push_back(session);
                session->start();
            }
        }
        accept();
    });
}

void WebConsole::Impl::broadcast(Message history_message, Message frame)
{
    // Copy: a session may leave the list while being offered a frame.
    const auto current = sessions;
    for (const auto& s : current) {
        if (history_message) s->offer_history(history_message);
        s->offer_frame(frame);
    }
}

void WebConsole::Impl::shutdown_network()
{
    beast::error_code ignored;
    if (acceptor) acceptor->close(ignored);
    if (accept_retry) accept_retry->cancel();
    const auto current = live;
    for (const auto& w : current) {
        if (auto c = w.lock()) c->abort();
    }
    live.clear();
}

std::string WebConsole::Impl::welcome(bool control) const
{
    JsonWriter w;
    w.begin_object();
    w.key("type").string("welcome");
    w.key("title").string(config.title);
    w.key("control").boolean(control);
    w.key("token_required").boolean(token_required);
    w.key("idle_timeout_s").number(seconds(config.viewer_idle_timeout));
    // Plain HTTP off loopback (allow_insecure): the page says so to whoever uses it.
    w.key("insecure").boolean(!loopback && !tls());
    w.key("step_s").number(std::chrono::duration<double>(handler.step_size()).count(), 9);
    w.key("frame_period_s").number(seconds(config.frame_period));
    w.key("timeline_window_s").number(seconds(config.timeline_window));
    w.key("history_window_s").number(seconds(config.history_window));
    w.key("paced").boolean(sources.pacer != nullptr);
    w.key("has_scale").boolean(sources.scale != nullptr);
    w.key("has_scene").boolean(sources.scene != nullptr);
    w.key("has_timeline").boolean(sources.timeline != nullptr);
    w.end_object();
    return w.take();
}

std::string WebConsole::Impl::handle_command(std::string_view text, std::optional<std::int64_t> id, bool control)
{
    JsonWriter w;
    w.begin_object();
    w.key("type").string("reply");
    w.key("id");
    if (id) {
        w.integer(*id);
    } else {
        w.null();
    }
    w.key("command").string(text);
    std::string error;
    std::string done;
    try {
        const OperatorCommand c = parse_operator_command(text);
        if (c.kind == OperatorCommand::Kind::status || c.kind == OperatorCommand::Kind::quit) {
            error = std::string(to_string(c.kind)) + ": not available from the web console";
        } else if (!control) {
            error = "view only: control needs the token printed with the console's URL";
        } else {
            done = apply_operator_command(c, handler, sources.scale);
        }
    } catch (const Error& e) {
        error = e.what();
    }
    if (error.empty()) {
        ++applied;
        w.key("ok").boolean(true);
        w.key("message").string(done);
    } else {
        ++rejected;
        w.key("ok").boolean(false);
        w.key("message").string(error);
    }
    w.end_object();
    return w.take();
}

// ---------------------------------------------------------------------- sampler

void WebConsole::Impl::frame_soon()
{
    {
        std::lock_guard<std::mutex> g(stop_mutex);
        changed = true;
    }
    stop_cv.notify_all();
}

void WebConsole::Impl::sampler_loop()
{
    // An event brings the next frame forward, but frames stay at least a quarter
    // period (at most 50 ms) apart: a burst of single steps must not turn the
    // sampler into a busy loop.
    const auto min_gap = std::min<WallClock::duration>(config.frame_period / 4, std::chrono::milliseconds(50));
    try {
        auto next = WallClock::now();
        auto last = next - config.frame_period;
        for (;;) {
            {
                std::unique_lock<std::mutex> lock(stop_mutex);
                for (;;) {
                    if (stopping) return;
                    const auto now = WallClock::now();
                    if (now >= next || (changed && now >= last + min_gap)) break;
                    stop_cv.wait_until(lock, changed ? std::min(next, last + min_gap) : next);
                }
                changed = false;
            }
            last = WallClock::now();
            tick();
            // Timed from this frame's start; a frame that took longer than a
            // period (a long scene read) is followed at once, never by a burst.
            next = last + config.frame_period;
        }
    } catch (...) {
        std::lock_guard<std::mutex> g(failure_mutex);
        failure = std::current_exception();
    }
}

bool WebConsole::Impl::read_scene()
{
    // Try first without waiting; then wait a little for a holder of an
    // exclusive access at this instant; a time that passed meanwhile is retried
    // at the new instant. Never longer than a quarter of a frame period.
    const auto patience = std::min<WallClock::duration>(config.frame_period / 4, std::chrono::milliseconds(10));
    Access access;
    for (int attempt = 0; attempt < 3 && !access; ++attempt) {
        const SimTime t = handler.now();
        access = accessor->try_request_access(t);
        if (!access && access.error() == errc::would_block) access = accessor->request_access_for(t, patience);
        if (!access && access.error() != errc::time_passed) break;
    }
    if (!access) return false;
    scene_frame.shapes.clear();
    scene_error.clear();
    try {
        sources.scene->draw(access.world(), scene_frame);
    } catch (const std::exception& e) {
        scene_error = e.what();
        scene_frame.shapes.clear();
    }
    scene_time = access.granted_time();
    access.release();
    return true;
}

void WebConsole::Impl::tick()
{
    const Snapshot snap = handler.snapshot();
    const WallTime wall = WallClock::now();

    // Grants per second and simulated seconds per wall second over the last second.
    rate_points.push_back({wall, snap.now, snap.grants});
    while (rate_points.size() > 2 && wall - rate_points[1].wall >= std::chrono::seconds(1)) rate_points.pop_front();
    double measured = 0;
    double grant_rate = 0;
    if (rate_points.size() >= 2) {
        const double dt = seconds(rate_points.back().wall - rate_points.front().wall);
        if (dt > 0) {
            measured = seconds(rate_points.back().sim) / dt - seconds(rate_points.front().sim) / dt;
            grant_rate = static_cast<double>(rate_points.back().grants - rate_points.front().grants) / dt;
        }
    }
    std::optional<double> achieved;
    std::optional<double> target;
    if (sources.pacer != nullptr) {
        const PacerStats stats = sources.pacer->stats();
        achieved = stats.achieved_factor;
        target = sources.scale != nullptr ? sources.scale->value() : stats.target_factor;
        if (!sources.pacer->running()) target.reset(); // stopped pacing: unpaced from now on
    } else {
        achieved = measured;
    }
    history.push_back({wall, achieved, target});
    while (!history.empty() && wall - history.front().wall > config.history_window) history.pop_front();

    if (accessor) {
        if (read_scene()) {
            ++scene_reads;
        } else {
            ++scene_misses;
        }
    }

    std::vector<GrantTimeline::TrackSpans> fresh;
    if (sources.timeline != nullptr) {
        fresh = sources.timeline->read(timeline_cursor);
        if (recent.size() < fresh.size()) recent.resize(fresh.size());
        for (const auto& t : fresh) {
            RecentTrack& r = recent[t.track];
            r.name = t.name;
            r.category = t.category;
            for (const GrantSpan& s : t.spans) r.spans.push_back(s);
            while (!r.spans.empty() && (r.spans.size() > kMaxSpansPerTrack ||
                                        wall - r.spans.front().released > config.timeline_window)) {
                r.spans.pop_front();
            }
        }
    }

    auto frame = std::make_shared<const std::string>(
        build_frame(snap, wall, achieved, target, measured, grant_rate, fresh));
    Message history_message;
    if (history_wanted.exchange(false)) history_message = std::make_shared<const std::string>(build_history(wall));
    ++frames;
    asio::post(*ioc, [this, history_message, frame] { broadcast(history_message, frame); });
}

namespace {

void write_span(JsonWriter& w, const GrantSpan& s, WallTime origin)
{
    w.begin_array();
    w.fixed(seconds(s.asked - origin), 5);
    w.fixed(seconds(s.granted_at - origin), 5);
    w.fixed(seconds(s.released - origin), 5);
    w.fixed(seconds(s.requested), 6);
    w.fixed(seconds(s.granted), 6);
    w.end_array();
}

void write_optional(JsonWriter& w, const std::optional<double>& v)
{
    if (v) {
        w.number(*v, 5);
    } else {
        w.null();
    }
}

} // namespace

std::string WebConsole::Impl::build_frame(const Snapshot& snap, WallTime wall, std::optional<double> achieved,
                                          std::optional<double> target, double measured, double grant_rate,
                                          const std::vector<GrantTimeline::TrackSpans>& fresh)
{
    JsonWriter w;
    w.begin_object();
    w.key("type").string("frame");
    w.key("seq").unsigned_integer(++sequence);
    w.key("wall").fixed(seconds(wall - origin), 4);
    w.key("now").fixed(seconds(snap.now), 9);
    w.key("now_ns").string(std::to_string(snap.now.time_since_epoch().count()));
    w.key("state").string(to_string(snap.state));
    w.key("steps").unsigned_integer(snap.steps);
    w.key("grants").unsigned_integer(snap.grants);
    w.key("pause_at");
    if (snap.pause_at) {
        w.fixed(seconds(*snap.pause_at), 9);
    } else {
        w.null();
    }
    w.key("rtf").begin_object();
    w.key("target");
    write_optional(w, target);
    w.key("achieved");
    write_optional(w, achieved);
    w.key("measured").number(measured, 5);
    w.end_object();
    w.key("grants_per_s").number(grant_rate, 6);
    w.key("waiting_for").begin_array();
    for (const auto& n : snap.waiting_for) w.string(n);
    w.end_array();
    w.key("waiting_for_s").fixed(seconds(snap.waiting_for_how_long), 3);
    w.key("accessors").begin_array();
    for (const AccessorStatus& a : snap.accessors) {
        w.begin_object();
        w.key("name").string(a.name);
        w.key("kind").string(to_string(a.kind));
        w.key("mode").string(to_string(a.mode));
        w.key("priority").integer(a.priority);
        w.key("registered").boolean(a.registered);
        w.key("activity").string(to_string(a.activity));
        w.key("time").fixed(seconds(a.time), 6);
        w.key("for_s").fixed(seconds(a.for_how_long), 4);
        w.key("grants").unsigned_integer(a.grants);
        w.end_object();
    }
    w.end_array();
    if (sources.timeline != nullptr) {
        // Only what is new; a page keeps the rest. At most the window's worth.
        w.key("timeline").begin_array();
        for (const auto& t : fresh) {
            w.begin_object();
            w.key("track").unsigned_integer(t.track);
            w.key("name").string(t.name);
            w.key("category").string(t.category);
            w.key("spans").begin_array();
            std::size_t first = t.spans.size() > kMaxSpansPerTrack ? t.spans.size() - kMaxSpansPerTrack : 0;
            while (first < t.spans.size() && wall - t.spans[first].released > config.timeline_window) ++first;
            for (std::size_t i = first; i < t.spans.size(); ++i) write_span(w, t.spans[i], origin);
            w.end_array();
            w.end_object();
        }
        w.end_array();
    }
    if (accessor) {
        w.key("scene").begin_object();
        w.key("time");
        if (scene_time) {
            w.fixed(seconds(*scene_time), 9);
        } else {
            w.null();
        }
        w.key("error");
        if (scene_error.empty()) {
            w.null();
        } else {
            w.string(scene_error);
        }
        w.key("bounds");
        if (scene_frame.bounds) {
            const Bounds& b = *scene_frame.bounds;
            w.begin_array();
            for (double v : {b.min.x, b.min.y, b.min.z, b.max.x, b.max.y, b.max.z}) w.fixed(v, 3);
            w.end_array();
        } else {
            w.null();
        }
        w.key("ground");
        if (scene_frame.ground_z) {
            w.fixed(*scene_frame.ground_z, 3);
        } else {
            w.null();
        }
        w.key("camera");
        if (scene_frame.camera) {
            w.begin_array();
            w.fixed(scene_frame.camera->azimuth_deg, 2);
            w.fixed(scene_frame.camera->elevation_deg, 2);
            w.end_array();
        } else {
            w.null();
        }
        // [id, kind (0 sphere, 1 box), x, y, z, qx, qy, qz, qw, sx, sy, sz, colour]
        w.key("shapes").begin_array();
        for (const Shape& s : scene_frame.shapes) {
            w.begin_array();
            w.unsigned_integer(s.id);
            w.integer(s.kind == ShapeKind::box ? 1 : 0);
            w.fixed(s.position.x, 4);
            w.fixed(s.position.y, 4);
            w.fixed(s.position.z, 4);
            w.fixed(s.orientation.x, 5);
            w.fixed(s.orientation.y, 5);
            w.fixed(s.orientation.z, 5);
            w.fixed(s.orientation.w, 5);
            w.fixed(s.size.x, 4);
            w.fixed(s.size.y, 4);
            w.fixed(s.size.z, 4);
            w.unsigned_integer(s.colour & 0xFFFFFFu);
            w.end_array();
        }
        w.end_array();
        w.end_object();
    }
    w.end_object();
    return w.take();
}

std::string WebConsole::Impl::build_history(WallTime wall) const
{
    JsonWriter w;
    w.begin_object();
    w.key("type").string("history");
    w.key("wall").fixed(seconds(wall - origin), 4);
    // [wall, achieved, target] per frame over the history window.
    w.key("rtf").begin_array();
    for (const HistoryPoint& p : history) {
        w.begin_array();
        w.fixed(seconds(p.wall - origin), 3);
        write_optional(w, p.achieved);
        write_optional(w, p.target);
        w.end_array();
    }
    w.end_array();
    w.key("timeline").begin_array();
    for (std::size_t i = 0; i < recent.size(); ++i) {
        w.begin_object();
        w.key("track").unsigned_integer(i);
        w.key("name").string(recent[i].name);
        w.key("category").string(recent[i].category);
        w.key("spans").begin_array();
        for (const GrantSpan& s : recent[i].spans) write_span(w, s, origin);
        w.end_array();
        w.end_object();
    }
    w.end_array();
    w.end_object();
    return w.take();
}

// ------------------------------------------------------------------ public face

WebConsole::WebConsole(SimSyncHandler& handler, WebConsoleSources sources, WebConsoleConfig config)
    : impl_(std::make_unique<Impl>(handler, sources, std::move(config)))
{
}

WebConsole::~WebConsole() { stop(); }

void WebConsole::stop()
{
    Impl& i = *impl_;
    {
        std::lock_guard<std::mutex> g(i.stop_mutex);
        if (i.stopped) return;
        i.stopped = true;
        i.stopping = true;
    }
    i.stop_cv.notify_all();
    i.events.reset(); // waits for a callback running now; none afterwards
    if (i.sampler.joinable()) i.sampler.join();
    i.accessor.reset(); // deregisters: the console no longer touches the world
    // Close every socket on the network thread, let the aborted operations
    // finish, then end the thread. Anything still pending after a bound (a
    // peer that never completes a close) is dropped with the io_context.
    asio::post(*i.ioc, [&i] { i.shutdown_network(); });
    i.work.reset();
    if (i.network_done.wait_for(std::chrono::seconds(2)) != std::future_status::ready) i.ioc->stop();
    if (i.network.joinable()) i.network.join();
    i.sessions.clear();
    i.live.clear();
    i.acceptor.reset();
    i.accept_retry.reset();
    i.ioc.reset(); // destroys the remaining handlers and with them the sessions
}

std::string WebConsole::url() const
{
    const Impl& i = *impl_;
    const bool v6 = i.bound.host.find(':') != std::string::npos;
    std::string url = std::string(i.tls() ? "https://" : "http://") + (v6 ? "[" + i.bound.host + "]" : i.bound.host) +
                      ":" + std::to_string(i.bound.port) + "/";
    if (i.token_required) url += "#token=" + i.token;
    return url;
}

bool WebConsole::tls() const { return impl_->tls(); }

Endpoint WebConsole::endpoint() const { return impl_->bound; }
const std::string& WebConsole::token() const { return impl_->token; }
bool WebConsole::control_requires_token() const { return impl_->token_required; }

WebConsoleStats WebConsole::stats() const
{
    const Impl& i = *impl_;
    WebConsoleStats s;
    s.frames = i.frames;
    s.frames_sent = i.frames_sent;
    s.frames_dropped = i.frames_dropped;
    s.connections_accepted = i.accepted;
    s.connections_open = i.open;
    s.requests_refused = i.refused;
    s.accept_failures = i.accept_failures;
    s.connections_refused = i.connections_refused;
    s.handshakes_timed_out = i.handshakes_timed_out;
    s.viewers_idled_out = i.viewers_idled_out;
    s.hellos_refused = i.hellos_refused;
    s.commands_applied = i.applied;
    s.commands_rejected = i.rejected;
    s.closed_for_bad_messages = i.closed_bad;
    s.scene_reads = i.scene_reads;
    s.scene_misses = i.scene_misses;
    return s;
}

std::exception_ptr WebConsole::failure() const
{
    std::lock_guard<std::mutex> g(impl_->failure_mutex);
    return impl_->failure;
}

} // namespace simsync::web
