#pragma once
/// @file
/// WebConsole: a live operator console in the browser, served by the host
/// process: one page and a WebSocket that show simulated time, the real-time
/// factor, the accessors, a timeline of grants and the world, and that pause,
/// step, run until, scale and revoke through the handler's public API.

#include <simsync/accessors/pacer.hpp>
#include <simsync/clock/time_scale.hpp>
#include <simsync/core/handler.hpp>
#include <simsync/core/time.hpp>
#include <simsync/web/scene.hpp>
#include <simsync/web/timeline.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace simsync::web {

/// Where a console listens.
struct Endpoint {
    /// An IPv4 or IPv6 address literal, or "localhost" (127.0.0.1).
    std::string host = "127.0.0.1";
    /// 0: the system chooses a free port (WebConsole::endpoint() tells which).
    std::uint16_t port = 0;
};

/// Parses `[HOST:]PORT` as given to `--web`: "8080" (loopback), "0" (loopback,
/// a free port), "0.0.0.0:8080", "192.0.2.7:80", "[::1]:8080", "localhost:8080".
/// Pure function; any thread.
/// @throws simsync::Error (invalid_argument) quoting the text and saying what is
///         wrong (no port, port out of range, host not an address).
Endpoint parse_endpoint(std::string_view text);

/// True if `host` (an address literal or "localhost") is a loopback address:
/// 127.0.0.0/8, ::1 or an IPv4-mapped 127.x. Pure function; any thread.
/// @throws simsync::Error (invalid_argument) if `host` is not an address.
bool is_loopback(std::string_view host);

/// Shortest control token accepted: 32 characters of [A-Za-z0-9_-], at least
/// 128 bits even when every character is a hex digit.
inline constexpr std::size_t kMinTokenLength = 32;

/// How a WebConsole behaves (plain values with defaults). Every field is
/// checked by the WebConsole constructor, which names the field it refuses.
struct WebConsoleConfig {
    Endpoint endpoint;
    /// The token that control commands need: at least kMinTokenLength
    /// characters of [A-Za-z0-9_-]. Empty: one is generated (128 random bits,
    /// 32 hex digits) if the console listens on a non-loopback address or
    /// `require_token` is set; otherwise control needs none. A page sends it in
    /// its first WebSocket message, never in a URL.
    std::string token;
    /// Require the token for control commands on loopback too.
    bool require_token = false;
    /// TLS (https, wss): a PEM certificate chain and its PEM private key. Both
    /// or neither. Required on any address but loopback unless
    /// `allow_insecure`: the token would otherwise cross the network in clear.
    std::string tls_certificate_file;
    std::string tls_private_key_file;
    /// Serve plain HTTP on a non-loopback address (a trusted network, or TLS
    /// ended by a proxy in front). Without it and without TLS such an endpoint
    /// is refused.
    bool allow_insecure = false;
    /// Host names a request's Host and a WebSocket's Origin may name besides
    /// the address the connection reached (and "localhost" when that address is
    /// a loopback one): e.g. the machine's DNS name. Compared without case;
    /// the port is not compared.
    std::vector<std::string> allowed_hosts;
    /// How often the sampler reads the handler and sends every viewer a frame.
    /// Must be > 0.
    WallClock::duration frame_period{std::chrono::milliseconds(100)};
    /// Longest incoming WebSocket message accepted; a longer one closes that
    /// connection (status 1009). Must be >= 64.
    std::size_t max_message_bytes = 4096;
    /// WebSocket connections at once (controllers and viewers); more are
    /// refused (HTTP 503, or close 1013 after the hello). Must be > 0.
    std::size_t max_connections = 32;
    /// Of `max_connections`, those only a connection with the token may take:
    /// viewers get at most max_connections - reserved_for_control, so a crowd
    /// of viewers never keeps the operator out. At most max_connections.
    std::size_t reserved_for_control = 4;
    /// Connections at once from one peer address that are not (yet) controllers:
    /// page loads, handshakes in progress and viewers; one more is closed when
    /// accepted. Must be > 0.
    std::size_t max_per_address = 8;
    /// Connections at once that have not finished their handshakes (TLS, HTTP
    /// request, WebSocket upgrade, hello) or are serving the page; one more is
    /// closed when accepted. Must be > 0.
    std::size_t max_pending = 64;
    /// The longest a connection may take from accept to its hello (TLS
    /// handshake, HTTP request, WebSocket upgrade, first message), and a page
    /// connection to send each request: a silent connection is closed then.
    /// Must be > 0.
    WallClock::duration handshake_timeout{std::chrono::seconds(5)};
    /// A viewer (a connection without control) that sends no message for this
    /// long is closed; the page sends a ping every third of it. Controllers are
    /// kept by WebSocket pings instead. Must be > 0.
    WallClock::duration viewer_idle_timeout{std::chrono::seconds(30)};
    /// Replies (to commands) queued for one connection that does not read them;
    /// one more closes that connection. Must be > 0.
    std::size_t max_queued_replies = 64;
    /// The console's accessor (free, shared), registered only with a SceneSource.
    std::string accessor_name = "web_console";
    /// Shown as the page's title (e.g. the program's name).
    std::string title = "simsync";
    /// Wall time of grants the timeline shows, and of real-time factor the plot
    /// keeps (the page's history when it connects). Both must be > 0.
    WallClock::duration timeline_window{std::chrono::seconds(5)};
    WallClock::duration history_window{std::chrono::seconds(60)};
};

/// What a console watches and drives besides the handler. Every pointer may be
/// null; every object must outlive the console.
struct WebConsoleSources {
    /// The time scale: the target real-time factor, and `scale X` commands
    /// (refused without it).
    TimeScale* scale = nullptr;
    /// The pacer: the achieved real-time factor (RealTimePacer::stats). Without
    /// one the factor is measured from the console's own snapshots.
    const RealTimePacer* pacer = nullptr;
    /// The world picture. Without one the console registers no accessor and
    /// never touches the world.
    const SceneSource* scene = nullptr;
    /// The host's record of grants, for the timeline. Without one the page shows
    /// no timeline.
    const GrantTimeline* timeline = nullptr;
};

/// What a console has done so far (counters since construction).
struct WebConsoleStats {
    std::uint64_t frames = 0;         ///< frames built by the sampler
    std::uint64_t frames_sent = 0;    ///< frame messages written, all connections
    std::uint64_t frames_dropped = 0; ///< replaced by a newer frame before a slow connection took it
    std::uint64_t connections_accepted = 0; ///< WebSocket connections opened
    std::uint64_t connections_open = 0;     ///< WebSocket connections open now
    std::uint64_t requests_refused = 0;     ///< HTTP/upgrade requests refused (limits, bad Host/Origin, bad request)
    std::uint64_t connections_refused = 0;  ///< closed when accepted: per-address or pending limit
    std::uint64_t handshakes_timed_out = 0; ///< closed for not finishing TLS, request, upgrade or hello in time
    std::uint64_t viewers_idled_out = 0;    ///< viewers closed for sending nothing for viewer_idle_timeout
    std::uint64_t hellos_refused = 0;       ///< closed at the hello: wrong token, or no slot left for its kind
    std::uint64_t accept_failures = 0;      ///< accepts that failed (out of descriptors, ...); each waits before the next
    std::uint64_t commands_applied = 0;     ///< commands carried out
    std::uint64_t commands_rejected = 0;    ///< answered with an error, nothing changed
    std::uint64_t closed_for_bad_messages = 0; ///< connections closed: oversized, binary or malformed message
    std::uint64_t scene_reads = 0;  ///< pictures read inside a shared access
    std::uint64_t scene_misses = 0; ///< sampler ticks without a picture (access not granted in time)
};

/// A live operator console in the browser, served by the host process.
///
/// An observer built on the handler's public API only. A sampler thread of its
/// own, every `frame_period` (and at once, at most every 50 ms, after a
/// HandlerEvent such as a pause or a step's target reached, or when a page
/// connects), takes a Snapshot, the pacer's statistics and the
/// timeline's new spans and, with a SceneSource, reads the world inside a shared
/// access of a *free* accessor (highest priority, so it waits for no lockstep
/// accessor that has not asked yet; it first tries without waiting and then
/// waits at most a few milliseconds, for a holder of an exclusive access):
/// while it neither holds nor asks, it holds no time back. It turns that into
/// one message, which one network thread (Boost.Asio) sends to every connected
/// page. Each connection holds at most one unsent frame: a slow or stalled
/// browser loses frames (the newest replaces the waiting one), never holds the
/// sampler, and so never the simulation.
///
/// Commands (pause, resume, step N, until T, scale X, revoke NAME) arrive on the
/// WebSocket, are parsed and checked by parse_operator_command and carried out
/// by apply_operator_command, the same code as the terminal's keys; a bad one is
/// answered with an error and changes nothing. On a non-loopback address (or with
/// `require_token`) control needs the token, which a connection sends in its
/// first message (the hello) and url() carries in its fragment, which browsers
/// never send; without it a page may watch, not control. An oversized, binary
/// or malformed message closes that one connection. The page is compiled into
/// the library and loads nothing from elsewhere (its Content-Security-Policy
/// forbids it).
///
/// Against the network: on any address but loopback it serves TLS, or refuses
/// to start without `allow_insecure`. On every interface a request whose Host
/// names neither the address the connection reached nor an allowed host is
/// refused (DNS rebinding), and so is a WebSocket upgrade whose Origin is not
/// the console's own (cross-site WebSocket hijacking). Anonymous connections
/// cannot lock the operator out: slots reserved for controllers, a cap per
/// peer address, a deadline for every handshake and an idle limit for viewers
/// (see WebConsoleConfig); docs/security.md says what this does not cover.
///
/// The wire protocol is described in sim_adapters/web/README.md.
///
/// Copy/move: neither (owns threads).
/// Thread safety: distinct objects: safe. Shared objects: `stop`, `url`,
/// `endpoint`, `token`, `tls`, `control_requires_token`, `stats` and `failure` are
/// safe from any thread. The handler and every source must outlive the console.
///
/// @code
/// simsync::web::GrantTimeline timeline;
/// BallsScene scene;                                       // a SceneSource
/// simsync::web::WebConsole console(handler, {.scale = &scale, .pacer = &*pacer,
///                                            .scene = &scene, .timeline = &timeline},
///                                  {.endpoint = simsync::web::parse_endpoint("8080")});
/// std::printf("web console: %s\n", console.url().c_str());
/// @endcode
class WebConsole {
public:
    /// Listens on `config.endpoint`, registers the console's accessor (with a
    /// scene) and starts the network thread and the sampler.
    /// @throws simsync::Error: invalid_argument naming the field and value (a
    ///         bad config value, a host that is not an address, a token too
    ///         short, a non-loopback endpoint without TLS or `allow_insecure`, a
    ///         certificate or key that does not load), invalid_state if
    ///         the address cannot be bound (naming it and the system's reason),
    ///         duplicate_name from the handler.
    WebConsole(SimSyncHandler& handler, WebConsoleSources sources = {}, WebConsoleConfig config = {});
    WebConsole(const WebConsole&) = delete;
    WebConsole& operator=(const WebConsole&) = delete;
    /// Stops (see stop()).
    ~WebConsole();

    /// Closes every connection and the listening socket, ends both threads and
    /// deregisters the accessor. Returns when the threads have ended (within
    /// about one frame period plus the current scene read). Idempotent.
    void stop();

    /// `http://HOST:PORT/` (`https` with TLS), plus `#token=...` when control
    /// needs a token: a fragment, which a browser never sends; the page takes
    /// it, keeps it in the tab's sessionStorage and removes it from the address
    /// bar. For a wildcard address (0.0.0.0, ::) HOST is that address: use the
    /// machine's name or address in its place.
    std::string url() const;
    /// True if the console serves TLS.
    bool tls() const;
    /// The address listened on, with the actual port.
    Endpoint endpoint() const;
    /// The control token ("" if control needs none).
    const std::string& token() const;
    bool control_requires_token() const;
    WebConsoleStats stats() const;
    /// The exception that ended the sampler thread, if any (the page then stops
    /// updating; the network side keeps serving).
    std::exception_ptr failure() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace simsync::web
