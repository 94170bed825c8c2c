#include <simsync/core/error.hpp>
#include <simsync/web/console.hpp>

#include <boost/asio/ip/address.hpp>

#include <charconv>

namespace simsync::web {

namespace {

[[noreturn]] void bad(std::string_view text, const std::string& why)
{
    throw Error(errc::invalid_argument, "web endpoint '" + std::string(text) + "': " + why);
}

boost::asio::ip::address address_of(std::string_view host)
{
    if (host == "localhost") return boost::asio::ip::make_address_v4("127.0.0.1");
    boost::system::error_code ec;
    auto a = boost::asio::ip::make_address(std::string(host), ec);
    if (ec) {
        throw Error(errc::invalid_argument,
                    "web host '" + std::string(host) + "' is not an IPv4 or IPv6 address (nor localhost)");
    }
    return a;
}

} // namespace

bool is_loopback(std::string_view host)
{
    const auto a = address_of(host);
    if (a.is_v4()) return a.to_v4().is_loopback();
    const auto v6 = a.to_v6();
    if (v6.is_v4_mapped()) return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, v6).is_loopback();
    return v6.is_loopback();
}

Endpoint parse_endpoint(std::string_view text)
{
    Endpoint e;
    std::string_view port = text;
    if (!text.empty() && text.front() == '[') {
        const auto close = text.find(']');
        if (close == std::string_view::npos) bad(text, "an IPv6 address needs its closing ']'");
        e.host = std::string(text.substr(1, close - 1));
        if (close + 1 >= text.size() || text[close + 1] != ':') bad(text, "expected ':PORT' after the address");
        port = text.substr(close + 2);
    } else if (const auto colon = text.rfind(':'); colon != std::string_view::npos) {
        e.host = std::string(text.substr(0, colon));
        if (e.host.find(':') != std::string::npos) bad(text, "write an IPv6 address in brackets: [ADDRESS]:PORT");
        port = text.substr(colon + 1);
    }
    if (port.empty()) bad(text, "expected [HOST:]PORT, the port is missing");
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc{} || end != port.data() + port.size() || value > 65535) {
        bad(text, "the port must be a number from 0 to 65535, got '" + std::string(port) + "'");
    }
    e.port = static_cast<std::uint16_t>(value);
    if (e.host.empty()) bad(text, "the host before ':' is empty");
    try {
        address_of(e.host);
    } catch (const Error& error) {
        bad(text, error.what());
    }
    return e;
}

} // namespace simsync::web
