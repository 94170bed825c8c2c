#pragma once
// A WebSocket connection to the console, from its upgrade to its close: the
// hello that decides what it is, commands and their replies, frames.

#include "admission.hpp"
#include "console_impl.hpp"
#include "security.hpp"

namespace simsync::web {

namespace detail {

// A close reason must be at most 123 bytes; keep it ASCII so it is valid UTF-8.
inline websocket::close_reason close_reason(websocket::close_code code, std::string_view why)
{
    std::string reason;
    for (const char c : why.substr(0, 120)) reason += (static_cast<unsigned char>(c) < 0x80 && c >= 0x20) ? c : '?';
    return websocket::close_reason(code, reason);
}

} // namespace detail

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
            close(detail::close_reason(websocket::close_code::policy_error,
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
        if (impl.token_required && !hello.token.empty() && !detail::equal_in_constant_time(hello.token, impl.token)) {
            ++impl.hellos_refused;
            close(detail::close_reason(websocket::close_code::policy_error, "wrong token"));
            return;
        }
        control = !impl.token_required || !hello.token.empty();
        const std::size_t viewer_slots = impl.config.max_connections - impl.config.reserved_for_control;
        if (impl.sessions.size() >= impl.config.max_connections || (!control && impl.viewers >= viewer_slots)) {
            ++impl.hellos_refused;
            close(detail::close_reason(websocket::close_code::try_again_later,
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
        close(detail::close_reason(websocket::close_code::policy_error, why));
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

} // namespace simsync::web
