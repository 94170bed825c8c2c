#include "scenario_clock.hpp"

namespace simsync::examples {

ScenarioClock::ScenarioClock(SimSyncHandler& handler, const TimeScale& scale, const std::string& time_source,
                             const ClockConfig& clock)
{
    if (!clock.enabled) return;
    source_ = make_time_source(time_source, {.handler = &handler, .time_scale = &scale});
    // ClockPublisherConfig takes a period in whole nanoseconds: exact for every
    // rate that divides 1e9 (100 Hz, 1 kHz, ...), truncated otherwise.
    publisher_.emplace(handler, *source_, ClockPublisherConfig{.period = clock.schedule.nominal_period()});
    for (const ClockSinkConfig& sink : clock.sinks) {
        publisher_->add_sink(std::make_unique<UdpClockSink>(sink.host, sink.port));
    }
    publisher_->start();
}

void ScenarioClock::stop()
{
    if (publisher_) publisher_->stop();
}

std::uint64_t ScenarioClock::published() const { return publisher_ ? publisher_->published() : 0; }

} // namespace simsync::examples
