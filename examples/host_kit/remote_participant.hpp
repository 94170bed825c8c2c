#pragma once
// A host's controller in a process of its own (the host kit's remote
// controller program): a participant of the host's simulation over Cyclone
// DDS (simsync::dds::RemoteAccessor; the host runs the Bridge: remote_link.hpp).
// simsync-remote-controller (Bullet) and simsync-mujoco-remote-controller are
// this with their engine's control law.
//
// It joins as the in-process controller's twin (lockstep, exclusive,
// kControllerName, kControllerPriority, first request at 0), then at each
// grant: decodes the observation the host sent (remote_wire.hpp), computes the
// command with the engine's function (the one the in-process controller runs)
// and releases with it, declaring its next 100 Hz instant (controller_instant).
// It learns the run's end from the observations, so its schedule is the
// in-process one; at the final access it releases without a command and leaves.
//
// --random-delay-us MAX sleeps a random 0..MAX us (seeded by --seed) before each
// request and inside each access: the host's trajectory hash must not change.
//
// SIGINT or SIGTERM: once joined, it withdraws its request and leaves the host
// (which then ends its run: the controller left early), with its summary;
// before it has joined, it just exits.
//
// Exit status: 0 after the final access; 1 if it could not join or refused an
// observation; 2 bad option (also what prepare refuses: a model that does not
// load); 3 the host stopped the simulation before the end, or SIGINT / SIGTERM
// ended it. Example code, not library API.

#include "command_line.hpp"
#include "remote_wire.hpp"

#include <functional>
#include <string>
#include <vector>

namespace simsync::examples::host {

// The engine's part of a remote controller program. A value type.
struct RemoteControllerProgram {
    std::string program;       // "simsync-mujoco-remote-controller"
    std::string summary;       // --help's first lines: whose controller, what it does
    std::string synopsis_tail; // its own options in the usage line (" [--model FILE]")
    // Its own options and their check (option_error naming the option).
    std::function<void(CommandLine&)> add_options;
    std::function<void(const po::variables_map&)> check_options;
    // After the options, before joining: the payloads' format (a MuJoCo model
    // decides it). @throws std::exception naming the option and what failed (exit 2).
    std::function<WireFormat(const po::variables_map&)> prepare;
    // The command for an observation that is not the final one: the control
    // law, run on exactly the values the host sent.
    std::function<std::vector<double>(const ObservationFrame&)> command;
};

// The program: parses argv, joins, serves the host's grants. Returns main's
// exit status (above).
int run_remote_controller(const RemoteControllerProgram& program, int argc, char** argv);

} // namespace simsync::examples::host
