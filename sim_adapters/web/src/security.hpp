#pragma once
// The checks a connection to the web console passes, and the token it is
// checked against (WebConsole::Impl::host_allowed is in security.cpp too).

#include <boost/asio/ip/address.hpp>

#include <string>
#include <string_view>

namespace simsync::web::detail {

// A fresh control token: 128 bits from std::random_device, as 32 hex digits.
std::string random_token();

bool equal_in_constant_time(std::string_view a, std::string_view b);

// The host name of a Host header value ("127.0.0.1:8080", "[::1]:80", "localhost").
std::string_view host_name(std::string_view host);

// An IPv4-mapped IPv6 address as the IPv4 address it is (a dual-stack socket
// reached over IPv4), so that one peer is counted once and compared as written.
boost::asio::ip::address unmapped(const boost::asio::ip::address& a);

// The Content-Security-Policy of every HTTP response: the page loads nothing
// from anywhere but the console.
extern const char* const kSecurityPolicy;

} // namespace simsync::web::detail
