// The public face of the web console: WebConsole over its Impl.

#include "console_impl.hpp"

namespace simsync::web {

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
