// The console's network side: the checked configuration, the listening
// socket, accepting under the limits, and the network thread.

#include "admission.hpp"
#include "console_impl.hpp"
#include "http_session.hpp"
#include "security.hpp"

namespace simsync::web {

namespace {

// After a failed accept, the wait before the next: doubled at each failure in a
// row, back to none after a success.
constexpr auto kAcceptRetryFirst = std::chrono::milliseconds(5);
constexpr auto kAcceptRetryLongest = std::chrono::seconds(1);

} // namespace

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
    token = token_required ? (config.token.empty() ? detail::random_token() : config.token) : std::string();

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
        live.erase(std::remove_if(live.begin(), live.end(), [](const auto& w) { return w.expired(); }), live.end());
        beast::error_code peer_ec;
        const auto peer = socket.remote_endpoint(peer_ec);
        const auto address = detail::unmapped(peer.address());
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

} // namespace simsync::web
