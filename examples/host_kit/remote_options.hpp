#pragma once
// A host's --remote-controller options (the host kit's: simsync-bullet-host
// and simsync-mujoco-host offer the same): what --help lists, their checks,
// the link's options they make, the line the host prints about them, and
// offer_remote_controller, which gives a HostEngine all of it. The options are
// always there; without the dds adapter --remote-controller is refused with a
// message saying so. Example code, not library API.

#include "command_line.hpp"
#include "host_kit.hpp"
#include "remote_link.hpp"

#include <memory>
#include <optional>
#include <string>

namespace simsync::examples::host {

// The options in the usage line.
inline constexpr const char* kRemoteSynopsis =
    "\n       [--remote-controller spawn|wait [--remote-domain ID] [--remote-network NET]\n"
    "        [--remote-tag TAG] [--remote-partition P] [--remote-delay-us MAX]\n"
    "        [--remote-program PATH] [--remote-join-timeout SECONDS]\n"
    "        [--remote-security FILE [--remote-controller-security FILE]]]";

// Gives `engine` the --remote-controller options (added to its own) and the
// link that serves them with `protocol`: a spawned controller is
// protocol.controller_program beside the host unless --remote-program says
// otherwise.
void offer_remote_controller(HostEngine& engine, RemoteProtocol protocol);

// Adds the "remote controller" options and the fault test hooks (hidden);
// `controller_program` names the program in --help.
void add_remote_options(CommandLine& cli, const std::string& controller_program);
// --remote-* without --remote-controller, bad values, a build without the dds
// adapter: option_error naming the option.
void check_remote_options(const po::variables_map& values);
// The link's options (after check_remote_options), or nullopt without
// --remote-controller; the seed and the controller's arguments are set by the
// host.
std::optional<RemoteControllerOptions> remote_options(const po::variables_map& values, const RemoteProtocol& protocol);
// "controller in another process (spawn): DDS domain 0, loopback, ...".
std::string remote_plan_line(const RemoteControllerOptions& options);

} // namespace simsync::examples::host
