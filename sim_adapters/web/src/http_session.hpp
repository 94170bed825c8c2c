#pragma once
// A connection before its WebSocket: TLS, HTTP, the page, the upgrade.

#include "admission.hpp"
#include "console_impl.hpp"
#include "page_assets.hpp"
#include "security.hpp"
#include "ws_session.hpp"

namespace simsync::web {

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
    if (local_ec || !impl.host_allowed(detail::host_name(host), detail::unmapped(local.address()))) {
        refuse(http::status::forbidden, "this console does not answer to the host name '" +
                                            std::string(detail::host_name(host).substr(0, 100)) +
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
    res->set("Content-Security-Policy", detail::kSecurityPolicy);
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

} // namespace simsync::web
