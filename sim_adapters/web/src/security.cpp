#include "security.hpp"

#include "console_impl.hpp"

#include <cctype>
#include <cstdio>
#include <random>

namespace simsync::web {

namespace detail {

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

std::string_view host_name(std::string_view host)
{
    if (!host.empty() && host.front() == '[') {
        const auto close = host.find(']');
        return close == std::string_view::npos ? std::string_view{} : host.substr(1, close - 1);
    }
    return host.substr(0, host.find(':'));
}

asio::ip::address unmapped(const asio::ip::address& a)
{
    if (a.is_v6() && a.to_v6().is_v4_mapped()) return asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6());
    return a;
}

const char* const kSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

} // namespace detail

bool WebConsole::Impl::host_allowed(std::string_view name, const asio::ip::address& reached) const
{
    if (name.empty()) return false;
    boost::system::error_code ec;
    const auto literal = asio::ip::make_address(std::string(name), ec);
    if (!ec) return detail::unmapped(literal) == reached;
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

} // namespace simsync::web
