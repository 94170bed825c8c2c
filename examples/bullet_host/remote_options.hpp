#pragma once
// simsync-bullet-host's --remote-controller: its options (what --help lists,
// their checks, the link's options they make, the line the host prints about
// them) and the link as the host kit's RemoteController. The options are
// always there; without the dds adapter --remote-controller is refused with a
// message saying so. Example code, not library API.

#include "command_line.hpp"
#include "host_kit.hpp"
#include "remote_link.hpp"

#include <memory>
#include <optional>
#include <string>

namespace simsync::examples::bullet_host {

// The options in the usage line.
inline constexpr const char* kRemoteSynopsis =
    "\n       [--remote-controller spawn|wait [--remote-domain ID] [--remote-network NET]\n"
    "        [--remote-tag TAG] [--remote-partition P] [--remote-delay-us MAX]\n"
    "        [--remote-program PATH] [--remote-join-timeout SECONDS]\n"
    "        [--remote-security FILE [--remote-controller-security FILE]]]";

// Adds the "remote controller" options and the fault test hooks (hidden).
void add_remote_options(CommandLine& cli);
// --remote-* without --remote-controller, bad values, a build without the dds
// adapter: option_error naming the option.
void check_remote_options(const po::variables_map& values);
// The link's options (after check_remote_options), or nullopt without
// --remote-controller; the seed is set by the host.
std::optional<RemoteControllerOptions> remote_options(const po::variables_map& values);
// "controller in another process (spawn): DDS domain 0, loopback, ...".
std::string remote_plan_line(const RemoteControllerOptions& options);
// The link serving the controller in another process, for the host kit
// (defined with the link, in builds with the dds adapter only).
std::unique_ptr<host::RemoteController> make_remote_controller(SimSyncHandler& handler, Controller& controller,
                                                              SimTime end, RemoteControllerOptions options);

} // namespace simsync::examples::bullet_host
