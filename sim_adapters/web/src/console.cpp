#include <simsync/error.hpp>
#include <simsync/operator_commands.hpp>
#include <simsync/web/console.hpp>

#include "json_writer.hpp"
#include "page_assets.hpp"
#include "protocol.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <deque>
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

constexpr std::size_t kHttpHeaderLimit = 8192;
constexpr auto kHttpTimeout = std::chrono::seconds(30);
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

bool loopback_name(std::string_view name)
{
    if (name == "localhost") return true;
    try {
        return is_loopback(name);
    } catch (const Error&) {
        return false;
    }
}

// The value of `key` in a query string ("a=1&token=abc"), or "".
std::string_view query_value(std::string_view query, std::string_view key)
{
    while (!query.empty()) {
        const auto amp = query.find('&');
        const std::string_view pair = query.substr(0, amp);
        if (pair.size() > key.size() && pair.substr(0, key.size()) == key && pair[key.size()] == '=') {
            return pair.substr(key.size() + 1);
        }
        if (amp == std::string_view::npos) break;
        query.remove_prefix(amp + 1);
    }
    return {};
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
        applied{0}, rejected{0}, closed_bad{0}, scene_reads{0}, scene_misses{0}, accept_failures{0};

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
    struct Session;
    struct HttpSession;
    std::vector<std::shared_ptr<Session>> sessions; // WebSocket connections
    std::vector<std::weak_ptr<beast::tcp_stream>> http_streams;
    std::size_t http_sessions = 0;
    std::optional<asio::io_context> ioc;
    std::optional<tcp::acceptor> acceptor;
    std::optional<asio::steady_timer> accept_retry;
    asio::steady_timer::duration accept_delay{};
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
    std::thread network;
    std::future<void> network_done;
};

// ------------------------------------------------------------ WebSocket session

struct WebConsole::Impl::Session : std::enable_shared_from_this<Session> {
    Session(Impl& owner, tcp::socket socket, bool may_control)
        : impl(owner), ws(std::move(socket)), control(may_control)
    {
    }

    void start(http::request<http::empty_body> request)
    {
        ws.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
        ws.set_option(websocket::stream_base::decorator(
            [](websocket::response_type& r) { r.set(http::field::server, "simsync-web"); }));
        ws.read_message_max(impl.config.max_message_bytes);
        ws.auto_fragment(false);
        ws.async_accept(request, [self = shared_from_this()](beast::error_code ec) { self->on_accept(ec); });
    }

    void on_accept(beast::error_code ec)
    {
        if (ec) return; // the handshake failed: nothing was registered
        ++impl.accepted;
        ++impl.open;
        registered = true;
        impl.sessions.push_back(shared_from_this());
        queue_reply(std::make_shared<const std::string>(impl.welcome(control)));
        impl.history_wanted = true; // the sampler sends the history with its next frame ...
        impl.frame_soon();          // ... which it makes now
        read();
    }

    void read()
    {
        ws.async_read(in, [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
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
        const auto command = detail::parse_incoming(message, error);
        if (!command) {
            close_for("malformed message: " + error);
            return;
        }
        queue_reply(std::make_shared<const std::string>(impl.handle_command(command->text, command->id, control)));
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
        ws.async_close(reason, [self = shared_from_this()](beast::error_code) { self->finish(); });
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
    void offer_frame(const Message& frame)
    {
        if (closing || !has_history) return;
        if (pending_frame) ++impl.frames_dropped;
        pending_frame = frame;
        write_next();
    }

    void offer_history(const Message& history)
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
        ws.async_write(asio::buffer(*m), [self = shared_from_this(), m, is_frame](beast::error_code ec, std::size_t) {
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
        if (!registered) return;
        registered = false;
        --impl.open;
        auto& s = impl.sessions;
        s.erase(std::remove(s.begin(), s.end(), shared_from_this()), s.end());
    }

    void abort()
    {
        closing = true;
        beast::error_code ignored;
        beast::get_lowest_layer(ws).socket().close(ignored);
    }

    Impl& impl;
    websocket::stream<beast::tcp_stream> ws;
    beast::flat_buffer in;
    bool control;
    bool registered = false;
    bool closing = false;
    bool writing = false;
    bool has_history = false;
    std::deque<Message> replies;
    Message pending_frame;
};

// ----------------------------------------------------------------- HTTP session

// A plain HTTP connection: serves the page, or hands the socket to a Session on
// a WebSocket upgrade to /ws.
struct WebConsole::Impl::HttpSession : std::enable_shared_from_this<HttpSession> {
    HttpSession(tcp::socket socket, Impl& impl)
        : stream_(std::make_shared<beast::tcp_stream>(std::move(socket))), impl_(impl)
    {
    }
    std::weak_ptr<beast::tcp_stream> stream() const { return stream_; }
    void start() { read(); }

    void read();
    void on_read(beast::error_code ec);
    void respond(http::status status, std::string_view type, std::string_view body, bool keep_alive);
    void refuse(http::status status, std::string_view why);

    std::shared_ptr<beast::tcp_stream> stream_;
    Impl& impl_;
    beast::flat_buffer buffer_;
    std::optional<http::request_parser<http::empty_body>> parser_;
};

namespace {

const char* const kSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

} // namespace

void WebConsole::Impl::HttpSession::read()
{
    parser_.emplace();
    parser_->header_limit(kHttpHeaderLimit);
    parser_->body_limit(0);
    stream_->expires_after(kHttpTimeout);
    http::async_read(*stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
}

void WebConsole::Impl::HttpSession::on_read(beast::error_code ec)
{
    if (ec == http::error::end_of_stream || ec == asio::error::operation_aborted || ec == beast::error::timeout ||
        ec == asio::error::connection_reset || ec == asio::error::eof) {
        beast::error_code ignored;
        stream_->socket().shutdown(tcp::socket::shutdown_send, ignored);
        stream_->close();
        return;
    }
    if (ec) {
        refuse(http::status::bad_request, "bad request: " + ec.message());
        return;
    }
    const http::request<http::empty_body>& req = parser_->get();
    const std::string_view target(req.target().data(), req.target().size());
    const std::string_view path = target.substr(0, target.find('?'));
    const std::string_view query =
        target.find('?') == std::string_view::npos ? std::string_view{} : target.substr(target.find('?') + 1);
    const std::string_view host(req[http::field::host].data(), req[http::field::host].size());

    // On loopback, a Host that is not a loopback name means a page of another
    // site reached us through DNS rebinding: refuse.
    if (impl_.loopback && !loopback_name(host_name(host))) {
        refuse(http::status::forbidden, "this console answers to loopback host names only");
        return;
    }
    if (websocket::is_upgrade(req)) {
        if (path != "/ws") {
            refuse(http::status::not_found, "no WebSocket here (use /ws)");
            return;
        }
        // A page of another origin must not drive the console (cross-site
        // WebSocket hijacking); raw clients send no Origin.
        const auto origin = req.find(http::field::origin);
        if (origin != req.end()) {
            const std::string_view o(origin->value().data(), origin->value().size());
            if (o != "http://" + std::string(host)) {
                refuse(http::status::forbidden, "WebSocket from another origin refused");
                return;
            }
        }
        if (impl_.sessions.size() >= impl_.config.max_connections) {
            refuse(http::status::service_unavailable, "too many connections");
            return;
        }
        const bool control =
            !impl_.token_required || equal_in_constant_time(query_value(query, "token"), impl_.token);
        stream_->expires_never();
        auto session = std::make_shared<Session>(impl_, stream_->release_socket(), control);
        session->start(parser_->release());
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

void WebConsole::Impl::HttpSession::respond(http::status status, std::string_view type, std::string_view body, bool keep_alive)
{
    auto res = std::make_shared<http::response<http::string_body>>(status, 11);
    res->set(http::field::server, "simsync-web");
    res->set(http::field::content_type, type);
    res->set(http::field::cache_control, "no-store");
    res->set("X-Content-Type-Options", "nosniff");
    res->set("Referrer-Policy", "no-referrer"); // the URL may carry the token
    res->set("Content-Security-Policy", kSecurityPolicy);
    res->keep_alive(keep_alive);
    if (parser_ && parser_->get().method() == http::verb::head) {
        res->content_length(body.size());
    } else {
        res->body() = std::string(body);
        res->prepare_payload();
    }
    http::async_write(*stream_, *res, [self = shared_from_this(), res, keep_alive](beast::error_code ec, std::size_t) {
        if (!ec && keep_alive) {
            self->read();
            return;
        }
        beast::error_code ignored;
        self->stream_->socket().shutdown(tcp::socket::shutdown_send, ignored);
        self->stream_->close();
    });
}

void WebConsole::Impl::HttpSession::refuse(http::status status, std::string_view why)
{
    ++impl_.refused;
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
    if (config.max_queued_replies == 0) bad("max_queued_replies must be > 0");
    if (config.timeline_window <= WallClock::duration::zero()) bad("timeline_window must be > 0");
    if (config.history_window <= WallClock::duration::zero()) bad("history_window must be > 0");
    if (sources.scene != nullptr && config.accessor_name.empty()) bad("accessor_name must not be empty");
    for (const char ch : config.token) {
        if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_') {
            bad("token may hold letters, digits, '-' and '_' only");
        }
    }

    loopback = is_loopback(config.endpoint.host); // throws for a host that is not an address
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
        // Bound the plain HTTP sessions too: each lives at most kHttpTimeout
        // without a request, but a flood must not pile them up.
        http_streams.erase(std::remove_if(http_streams.begin(), http_streams.end(),
                                          [](const auto& w) { return w.expired(); }),
                           http_streams.end());
        if (http_streams.size() >= 4 * config.max_connections) {
            ++refused;
            beast::error_code ignored;
            socket.close(ignored);
        } else {
            auto session = std::make_shared<HttpSession>(std::move(socket), *this);
            http_streams.push_back(session->stream());
            session->start();
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
    const auto current = sessions;
    for (const auto& s : current) s->abort();
    for (const auto& w : http_streams) {
        if (auto stream = w.lock()) stream->close();
    }
    http_streams.clear();
}

std::string WebConsole::Impl::welcome(bool control) const
{
    JsonWriter w;
    w.begin_object();
    w.key("type").string("welcome");
    w.key("title").string(config.title);
    w.key("control").boolean(control);
    w.key("token_required").boolean(token_required);
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
    i.acceptor.reset();
    i.accept_retry.reset();
    i.ioc.reset(); // destroys the remaining handlers and with them the sessions
}

std::string WebConsole::url() const
{
    const Impl& i = *impl_;
    const bool v6 = i.bound.host.find(':') != std::string::npos;
    std::string url = "http://" + (v6 ? "[" + i.bound.host + "]" : i.bound.host) + ":" + std::to_string(i.bound.port) + "/";
    if (i.token_required) url += "?token=" + i.token;
    return url;
}

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
