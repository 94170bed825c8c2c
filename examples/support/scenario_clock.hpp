#pragma once
// The clock publisher of a scenario, as the example programs run it: the time
// source named in the scenario, a publisher at the clock's rate, and a sink per
// configured destination (UDP built in; a registered kind through the maker the
// program gives for it), started on construction.

#include <simsync/simsync.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace simsync::examples {

// Builds a sink of a registered kind (ScenarioExtensions::clock_sinks) from its
// already validated node.
using ClockSinkMaker = std::function<std::unique_ptr<ClockSink>(const ConfigNode&)>;
using ClockSinkMakers = std::map<std::string, ClockSinkMaker, std::less<>>;

// A warning for a scenario whose clock publishes a time source that nothing in
// the program feeds (`external`: set from outside, e.g. by a ROS 2 /clock
// follower, which the example programs do not run), so every message would
// carry its start value, 0; nullopt if there is nothing to say.
std::optional<std::string> time_source_warning(const std::string& time_source, const ClockConfig& clock);

// Copy/move: neither (the publisher's completions refer to it). Construct and destroy
// on one thread; destruction (or stop()) ends the publisher.
class ScenarioClock {
public:
    // Does nothing if `clock.enabled` is false.
    // @throws simsync::Error: unknown time source, unresolvable sink host, a sink
    //         kind without a maker in `makers`.
    // `executor`: the event loop of the program's wall-clock accessors (the
    // publisher's paused messages); none: the publisher makes its own.
    ScenarioClock(SimSyncHandler& handler, const TimeScale& scale, const std::string& time_source,
                  const ClockConfig& clock, const ClockSinkMakers& makers = {}, Executor executor = {});
    ScenarioClock(const ScenarioClock&) = delete;
    ScenarioClock& operator=(const ScenarioClock&) = delete;

    // Stops publishing; idempotent.
    void stop();
    // Messages published so far (0 if disabled).
    std::uint64_t published() const;

private:
    std::unique_ptr<TimeSource> source_;
    std::optional<ClockPublisher> publisher_;
};

} // namespace simsync::examples
