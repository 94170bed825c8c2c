#include "scenario_clock.hpp"

#include <type_traits>
#include <variant>

namespace simsync::examples {

std::optional<std::string> time_source_warning(const std::string& time_source, const ClockConfig& clock)
{
    if (!clock.enabled || time_source != "external") return std::nullopt;
    return "time.source 'external' is set from outside (a ROS 2 /clock follower, an API call), and nothing in this "
           "program sets it: every clock message carries 0. For simulated time choose 'sim' (docs/config.md, "
           "\"Time sources\")";
}

ScenarioClock::ScenarioClock(SimSyncHandler& handler, const TimeScale& scale, const std::string& time_source,
                             const ClockConfig& clock, const ClockSinkMakers& makers, Executor executor)
{
    if (!clock.enabled) return;
    source_ = make_time_source(time_source, {.handler = &handler, .time_scale = &scale});
    // The scenario's rate as it is: exact also for rates that do not divide a
    // second (30 Hz: tick n at floor(n * 1e9 / 30) ns).
    publisher_.emplace(handler, *source_, ClockPublisherConfig{.schedule = clock.schedule}, executor);
    for (const ClockSinkConfig& sink : clock.sinks) {
        std::visit(
            [&](const auto& s) {
                using T = std::decay_t<decltype(s)>;
                if constexpr (std::is_same_v<T, UdpSinkConfig>) {
                    publisher_->add_sink(std::make_unique<UdpClockSink>(s.host, s.port));
                } else {
                    const auto maker = makers.find(s.kind);
                    if (maker == makers.end()) {
                        throw Error(errc::invalid_argument,
                                    "this program cannot build a clock sink of kind '" + s.kind + "'");
                    }
                    publisher_->add_sink(maker->second(s.config));
                }
            },
            sink);
    }
    publisher_->start();
}

void ScenarioClock::stop()
{
    if (publisher_) publisher_->stop();
}

std::uint64_t ScenarioClock::published() const { return publisher_ ? publisher_->published() : 0; }

} // namespace simsync::examples
