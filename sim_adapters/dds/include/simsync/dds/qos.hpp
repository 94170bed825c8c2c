#pragma once
/// @file
/// The DDS QoS settings simsync's endpoints let a user choose, and the DDS rule
/// that decides whether a writer and a reader match.

#include <chrono>
#include <cstdint>
#include <string>

namespace simsync::dds {

enum class Reliability {
    best_effort, ///< a lost sample stays lost; never waits for anybody
    reliable,    ///< lost samples are repaired (acknowledgements, resends)
};

enum class Durability {
    volatile_,       ///< "volatile": a reader gets only what is written after it matched
    transient_local, ///< the writer keeps its history for readers that join later
};

const char* to_string(Reliability r) noexcept; ///< "best_effort", "reliable"
const char* to_string(Durability d) noexcept;  ///< "volatile", "transient_local"
/// @throws simsync::Error (invalid_argument) naming the text and the choices.
Reliability parse_reliability(const std::string& name);
/// @throws simsync::Error (invalid_argument) naming the text and the choices.
Durability parse_durability(const std::string& name);

/// The QoS of one writer or reader. A value type.
struct Qos {
    Reliability reliability = Reliability::reliable;
    Durability durability = Durability::volatile_;
    /// History: keep the last `depth` samples (>= 1); 0 keeps all (within
    /// Cyclone's resource limits).
    std::int32_t depth = 1;
    /// Writers only: how long a reliable write may wait for readers to
    /// acknowledge when the writer's cache of unacknowledged data is full. Zero:
    /// never wait; the sample is dropped and the write reports it. Must be >= 0.
    std::chrono::nanoseconds max_blocking_time{0};

    friend bool operator==(const Qos&, const Qos&) = default;
};

/// "reliable, transient_local, keep last 1" (for messages and logs).
std::string describe(const Qos& qos);

/// The DDS request-offered rule for the two policies that can keep a ROS 2
/// reader from matching: a writer matches a reader if it offers at least what
/// the reader requests (reliable >= best effort, transient local >= volatile).
/// History depth never prevents a match.
constexpr bool matches(const Qos& writer, const Qos& reader) noexcept
{
    return static_cast<int>(writer.reliability) >= static_cast<int>(reader.reliability) &&
           static_cast<int>(writer.durability) >= static_cast<int>(reader.durability);
}

} // namespace simsync::dds
