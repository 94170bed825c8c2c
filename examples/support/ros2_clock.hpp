#pragma once
// ROS 2 /clock for the example programs, through the dds adapter
// (sim_adapters/dds) when it was built: the `ros2` clock sink kind in their
// scenario files and the options --ros2-clock [DOMAIN] and --ros2-network.
// Without the adapter (Cyclone DDS missing at configure time) the options are
// still listed, and using them, or a `ros2` sink in a scenario, is an error that
// says the program was built without it. Example code, not library API.

#include "command_line.hpp"
#include "scenario_clock.hpp"

#include <simsync/config/config.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace simsync::examples {

// Whether this build has the dds adapter.
bool have_ros2_clock() noexcept;

// --ros2-clock [DOMAIN]: also publish the clock as ROS 2 /clock on DDS domain
// DOMAIN (0..232; without a value $ROS_DOMAIN_ID, or 0 if unset).
// --ros2-network system|loopback: the network of that sink (default system:
// Cyclone's defaults, what ROS 2 nodes use; loopback: 127.0.0.1 only).
// --ros2-security FILE: DDS Security for that sink (dds_security.hpp).
void add_ros2_clock_options(po::options_description& options);
// Checks them (for a `check`): the domain, the network, the security file,
// --ros2-network or --ros2-security without --ros2-clock, and that this build
// can publish /clock at all.
void check_ros2_clock_options(const po::variables_map& values);
// The sink the options ask for, if any (after check_ros2_clock_options).
std::optional<ClockSinkConfig> ros2_clock_sink(const po::variables_map& values);

// Where the clock publisher of `clock` sends, in words, for the programs'
// first lines and summaries: "udp 127.0.0.1:15555, ROS 2 /clock (DDS topic
// rt/clock) on domain 0, system network", or "no sink (clock.sinks is empty)".
std::string describe_clock_sinks(const ClockConfig& clock);
// The programs' lines about their clock publisher: before the run ("clock:
// time source 'sim', every 0.010000000 s of simulated time, to <sinks>", or
// "clock: off (clock.enabled: false)") and in the summary ("clock: N messages
// from time source 'sim' to <sinks>", or "clock: N ticks, sent nowhere (no
// sink)").
std::string clock_plan_line(const ClockConfig& clock, const std::string& time_source);
std::string clock_summary_line(const ClockConfig& clock, const std::string& time_source, std::uint64_t published);

// Registers the `ros2` clock sink kind (checked at load, errors at
// file:line:column), or, without the adapter, a kind that refuses every use
// with a message naming the place.
void register_ros2_clock_sink(ScenarioExtensions& extensions);
// Adds the maker of `ros2` sinks for ScenarioClock (nothing without the adapter).
void add_ros2_clock_maker(ClockSinkMakers& makers);

} // namespace simsync::examples
