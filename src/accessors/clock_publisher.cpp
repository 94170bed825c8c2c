#include <simsync/clock_publisher.hpp>
#include <simsync/error.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace simsync {

// ------------------------------------------------------------------- callback

CallbackClockSink::CallbackClockSink(Callback callback) : callback_(std::move(callback))
{
    if (!callback_) throw Error(errc::invalid_argument, "CallbackClockSink: the callback is empty");
}

void CallbackClockSink::publish(const ClockMessage& message) { callback_(message); }

// ------------------------------------------------------------------- datagram

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

// ------------------------------------------------------------------ publisher

struct ClockPublisher::Impl {
    Impl(SimSyncHandler& h, const TimeSource& s, ClockPublisherConfig c)
        : handler(h), source(s), config(std::move(c))
    {
    }

    void run();
    void publish(ClockMessage message);
    SimTime tick(std::int64_t n) const { return SimTime{config.period * n}; }
    std::int64_t first_tick_at_or_after(SimTime t) const
    {
        const std::int64_t p = config.period.count();
        const std::int64_t ns = t.time_since_epoch().count(); // >= 0: simulation time starts at 0
        return ns / p + (ns % p != 0 ? 1 : 0);
    }
    void deliver(ClockSink& sink, const ClockMessage& message) noexcept
    {
        try {
            sink.publish(message);
        } catch (...) {
            // A broken subscriber must not take the clock down for the others.
            sink_failures.fetch_add(1, std::memory_order_relaxed);
        }
    }

    SimSyncHandler& handler;
    const TimeSource& source;
    const ClockPublisherConfig config;

    // Sinks, the sequence counter and the last message: held only while
    // publishing (after the access is released), never while reading time.
    std::mutex sinks_mutex;
    std::vector<std::unique_ptr<ClockSink>> sinks;
    std::optional<ClockMessage> last;
    std::uint64_t next_sequence = 0;
    std::atomic<std::uint64_t> published{0};
    std::atomic<std::uint64_t> sink_failures{0};

    // start/stop.
    std::mutex control_mutex;
    bool started = false;
    std::thread thread;
    Accessor accessor;
    std::atomic<bool> stop_requested{false};
    std::atomic<bool> running{false};
};

void ClockPublisher::Impl::publish(ClockMessage message)
{
    std::lock_guard<std::mutex> guard(sinks_mutex);
    message.sequence = next_sequence++;
    last = message;
    for (const auto& sink : sinks) deliver(*sink, message);
    published.fetch_add(1, std::memory_order_release);
}

void ClockPublisher::Impl::run()
{
    const WallClock::duration wall_period =
        config.paused_period > WallClock::duration::zero()
            ? config.paused_period
            : std::chrono::duration_cast<WallClock::duration>(config.period);
    // The frozen time of paused messages, and the operator action it belongs to.
    struct Frozen {
        bool valid = false;
        SourceTime time{};
        SimTime sim_time{};
        std::uint64_t generation = 0;
    } frozen;

    std::int64_t n = first_tick_at_or_after(handler.now());
    // Absolute deadlines keep paused messages at their rate without drift.
    WallTime paused_deadline = WallClock::now() + wall_period;
    while (!stop_requested.load(std::memory_order_acquire)) {
        Access access = accessor.request_access_until(tick(n), paused_deadline);
        if (access) {
            ClockMessage message;
            message.time = source.now();
            message.sim_time = access.granted_time();
            message.paused = handler.state() == HandlerState::paused;
            access.release(tick(n + 1)); // hold time at the next tick: none is skipped
            ++n;
            frozen.valid = false;
            publish(message);
            paused_deadline = WallClock::now() + wall_period;
            continue;
        }
        const std::error_code error = access.error();
        if (error == errc::timed_out) {
            // A timed-out lockstep request keeps holding time at its tick, so
            // nothing slips past while we publish the pause.
            if (handler.state() == HandlerState::paused) {
                const std::uint64_t generation = handler.run_generation();
                if (!frozen.valid || frozen.generation != generation) {
                    frozen = Frozen{true, source.now(), handler.now(), generation};
                }
                publish(ClockMessage{0, frozen.time, frozen.sim_time, true});
            }
            paused_deadline += wall_period;
            const WallTime now = WallClock::now();
            if (paused_deadline <= now) paused_deadline = now + wall_period; // fell behind: no burst
        } else {
            // stopped, world_failed, or not_registered (our stop, or an operator's
            // revoke). time_passed cannot happen: registration holds time at the
            // instant handler.now() reads, and every release names the next tick.
            if (error != errc::stopped && !stop_requested.load(std::memory_order_acquire)) {
                Diagnostic d;
                d.kind = Diagnostic::Kind::accessor_ended;
                d.at = handler.now();
                d.accessor = accessor.name();
                d.reason = error;
                d.message = "simsync: clock publisher '" + d.accessor + "' ended at " + format_seconds(d.at) +
                            " s: its request was refused (" + error.message() + ")";
                handler.report(d);
            }
            break;
        }
    }
    // Whatever ended the loop, stop holding simulated time.
    accessor.deregister();
    running.store(false, std::memory_order_release);
}

ClockPublisher::ClockPublisher(SimSyncHandler& handler, const TimeSource& source, ClockPublisherConfig config)
{
    if (config.period <= SimDuration::zero()) {
        throw Error(errc::invalid_argument,
                    "ClockPublisherConfig.period must be > 0, got " + std::to_string(config.period.count()) + " ns");
    }
    if (config.paused_period < WallClock::duration::zero()) {
        throw Error(errc::invalid_argument,
                    "ClockPublisherConfig.paused_period must be >= 0, got " +
                        std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(config.paused_period).count()) +
                        " ns");
    }
    impl_ = std::make_unique<Impl>(handler, source, std::move(config));
}

ClockPublisher::~ClockPublisher() { stop(); }

void ClockPublisher::add_sink(std::unique_ptr<ClockSink> sink)
{
    if (!sink) throw Error(errc::invalid_argument, "ClockPublisher::add_sink: the sink is null");
    std::lock_guard<std::mutex> guard(impl_->sinks_mutex);
    if (impl_->last) impl_->deliver(*sink, *impl_->last); // a late joiner learns the time at once
    impl_->sinks.push_back(std::move(sink));
}

void ClockPublisher::add_callback(CallbackClockSink::Callback callback)
{
    add_sink(std::make_unique<CallbackClockSink>(std::move(callback)));
}

void ClockPublisher::start()
{
    std::lock_guard<std::mutex> guard(impl_->control_mutex);
    if (impl_->started || impl_->stop_requested.load()) {
        throw Error(errc::invalid_state, "ClockPublisher '" + impl_->config.name + "' was " +
                                             (impl_->started ? "started" : "stopped") +
                                             " before; a publisher starts once");
    }
    // Registered here, not on the thread: from this call on time cannot pass the
    // current instant before the thread has asked for its first tick.
    impl_->accessor = impl_->handler.register_accessor(
        impl_->config.name,
        AccessorOptions{.kind = AccessorKind::lockstep, .mode = AccessMode::shared, .priority = impl_->config.priority});
    impl_->started = true;
    impl_->running.store(true, std::memory_order_release);
    impl_->thread = std::thread([impl = impl_.get()] { impl->run(); });
}

void ClockPublisher::stop()
{
    std::lock_guard<std::mutex> guard(impl_->control_mutex);
    impl_->stop_requested.store(true, std::memory_order_release);
    // Deregistering wakes a waiting request at once (not_registered) and lifts
    // our bound, so the simulation is not held by a publisher that is gone.
    impl_->accessor.deregister();
    // From a sink (on the clock thread) we cannot join ourselves; the thread
    // ends when the sink returns, and the destructor joins it.
    if (impl_->thread.joinable() && impl_->thread.get_id() != std::this_thread::get_id()) {
        impl_->thread.join();
    }
}

bool ClockPublisher::running() const noexcept { return impl_->running.load(std::memory_order_acquire); }

std::optional<ClockMessage> ClockPublisher::last_message() const
{
    std::lock_guard<std::mutex> guard(impl_->sinks_mutex);
    return impl_->last;
}

std::uint64_t ClockPublisher::published() const noexcept
{
    return impl_->published.load(std::memory_order_acquire);
}

std::uint64_t ClockPublisher::sink_failures() const noexcept
{
    return impl_->sink_failures.load(std::memory_order_relaxed);
}

const ClockPublisherConfig& ClockPublisher::config() const noexcept { return impl_->config; }

} // namespace simsync
