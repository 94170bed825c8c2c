#include <simsync/accessors/clock_udp.hpp>
#include <simsync/core/error.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>

#include <atomic>
#include <string>

namespace simsync {

namespace {

template <class T>
void put_le(ClockDatagram& d, std::size_t at, T value) noexcept
{
    using U = std::make_unsigned_t<T>;
    auto u = static_cast<U>(value);
    for (std::size_t i = 0; i < sizeof(T); ++i) {
        d[at + i] = static_cast<std::byte>(u & 0xFFu);
        u = static_cast<U>(u >> 8);
    }
}

template <class T>
T get_le(std::span<const std::byte> d, std::size_t at) noexcept
{
    using U = std::make_unsigned_t<T>;
    U u = 0;
    for (std::size_t i = sizeof(T); i-- > 0;) {
        u = static_cast<U>((u << 8) | static_cast<U>(d[at + i]));
    }
    return static_cast<T>(u); // two's complement (guaranteed since C++20)
}

constexpr std::array<char, 4> kMagic{'S', 'S', 'C', 'K'};

} // namespace

ClockDatagram encode_clock_datagram(const ClockMessage& message) noexcept
{
    ClockDatagram d{};
    for (std::size_t i = 0; i < kMagic.size(); ++i) d[i] = static_cast<std::byte>(kMagic[i]);
    put_le<std::uint16_t>(d, 4, kClockDatagramVersion);
    put_le<std::uint16_t>(d, 6, message.paused ? kClockFlagPaused : std::uint16_t{0});
    put_le<std::uint64_t>(d, 8, message.sequence);
    const RosTime ros = to_ros_time(message.time);
    put_le<std::int32_t>(d, 16, ros.sec);
    put_le<std::uint32_t>(d, 20, ros.nanosec);
    put_le<std::int64_t>(d, 24, message.sim_time.time_since_epoch().count());
    return d;
}

ClockMessage decode_clock_datagram(std::span<const std::byte> d)
{
    if (d.size() != kClockDatagramSize) {
        throw Error(errc::invalid_argument,
                    "clock datagram must be 32 bytes, got " + std::to_string(d.size()));
    }
    for (std::size_t i = 0; i < kMagic.size(); ++i) {
        if (d[i] != static_cast<std::byte>(kMagic[i])) {
            std::string got;
            for (std::size_t j = 0; j < kMagic.size(); ++j) {
                got += std::to_string(std::to_integer<unsigned>(d[j])) + (j + 1 < kMagic.size() ? " " : "");
            }
            throw Error(errc::invalid_argument, "clock datagram magic must be 'SSCK', got bytes " + got);
        }
    }
    const auto version = get_le<std::uint16_t>(d, 4);
    if (version != kClockDatagramVersion) {
        throw Error(errc::invalid_argument,
                    "clock datagram version must be 1, got " + std::to_string(version));
    }
    const RosTime ros{get_le<std::int32_t>(d, 16), get_le<std::uint32_t>(d, 20)};
    if (ros.nanosec >= 1'000'000'000u) {
        throw Error(errc::invalid_argument, "clock datagram nanoseconds must be below 1000000000, got " +
                                                std::to_string(ros.nanosec));
    }
    ClockMessage m;
    m.paused = (get_le<std::uint16_t>(d, 6) & kClockFlagPaused) != 0;
    m.sequence = get_le<std::uint64_t>(d, 8);
    m.time = from_ros_time(ros);
    m.sim_time = SimTime{SimDuration{get_le<std::int64_t>(d, 24)}};
    return m;
}

// ------------------------------------------------------------------------ UDP

struct UdpClockSink::Impl {
    boost::asio::io_context io;
    boost::asio::ip::udp::socket socket{io};
    boost::asio::ip::udp::endpoint endpoint;
    std::atomic<std::uint64_t> sent{0};
    std::atomic<std::uint64_t> errors{0};
};

UdpClockSink::UdpClockSink(const std::string& host, std::uint16_t port) : impl_(std::make_unique<Impl>())
{
    namespace ip = boost::asio::ip;
    const std::string where = host + ":" + std::to_string(port);
    boost::system::error_code ec;
    ip::udp::resolver resolver(impl_->io);
    const auto results = resolver.resolve(host, std::to_string(port), ip::resolver_base::numeric_service, ec);
    if (ec || results.empty()) {
        throw Error(errc::invalid_argument,
                    "UdpClockSink: cannot resolve " + where + ": " + (ec ? ec.message() : "no address"));
    }
    impl_->endpoint = *results.begin();
    impl_->socket.open(impl_->endpoint.protocol(), ec);
    if (ec) throw Error(errc::invalid_argument, "UdpClockSink: cannot open a socket for " + where + ": " + ec.message());
}

UdpClockSink::~UdpClockSink() = default;

void UdpClockSink::publish(const ClockMessage& message)
{
    const ClockDatagram d = encode_clock_datagram(message);
    boost::system::error_code ec;
    impl_->socket.send_to(boost::asio::buffer(d.data(), d.size()), impl_->endpoint, 0, ec);
    // UDP is best effort for subscribers too (a receiver that is not up yet
    // makes loopback sends fail with "connection refused"): count, carry on.
    (ec ? impl_->errors : impl_->sent).fetch_add(1, std::memory_order_relaxed);
}

std::uint64_t UdpClockSink::sent() const noexcept { return impl_->sent.load(std::memory_order_relaxed); }
std::uint64_t UdpClockSink::send_errors() const noexcept { return impl_->errors.load(std::memory_order_relaxed); }

} // namespace simsync
