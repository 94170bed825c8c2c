#pragma once
// ROS 2 /clock for the example programs, through the dds adapter
// (sim_adapters/dds) when it was built: the `ros2` clock sink kind in their
// scenario files and the options --ros2-clock [DOMAIN] and --ros2-network.
// Without the adapter (Cyclone DDS missing at configure time) the options are
// still listed, and using them, or a `ros2` sink in a scenario, is an error that
// says the program was built without it. Example code, not library API.

#include "command_line.hpp"
#include "scenario_clock.hpp"

#include <simsync/config.hpp>

#include <optional>

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

// Registers the `ros2` clock sink kind (checked at load, errors at
// file:line:column), or, without the adapter, a kind that refuses every use
// with a message naming the place.
void register_ros2_clock_sink(ScenarioExtensions& extensions);
// Adds the maker of `ros2` sinks for ScenarioClock (nothing without the adapter).
void add_ros2_clock_maker(ClockSinkMakers& makers);

} // namespace simsync::examples
