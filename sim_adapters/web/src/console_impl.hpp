#pragma once
// The web console's private state (WebConsole::Impl) and what its parts share.
// One concept per file around it: server.cpp (listening, accepting, the
// network thread), http_session.hpp (a connection before its WebSocket),
// ws_session.hpp (a WebSocket connection), admission.hpp and security.cpp (the
// limits and checks a connection passes), commands.cpp (operator commands),
// sampler.cpp (the sampler thread), frame.cpp (the frame and history
// messages), console.cpp (the public WebConsole).

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

namespace detail {

using Message = std::shared_ptr<const std::string>;
using Clock = asio::steady_timer::clock_type;
using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

inline constexpr std::size_t kHttpHeaderLimit = 8192;
// A WebSocket close handshake: the peer's answer is waited for this long.
inline constexpr auto kCloseTimeout = std::chrono::seconds(2);
// Spans per track in one message: enough for a few seconds of a 1 kHz accessor.
inline constexpr std::size_t kMaxSpansPerTrack = 500;

inline double seconds(WallClock::duration d) { return std::chrono::duration<double>(d).count(); }
inline double seconds(SimTime t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

} // namespace detail

using detail::Clock;
using detail::kCloseTimeout;
using detail::kHttpHeaderLimit;
using detail::kMaxSpansPerTrack;
using detail::Message;
using detail::PlainStream;
using detail::seconds;
using detail::TlsStream;

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

} // namespace simsync::web
