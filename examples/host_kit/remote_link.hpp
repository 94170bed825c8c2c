#pragma once
// A host's --remote-controller (the host kit's): the host's side of a
// controller in another process, over Cyclone DDS through the dds adapter's
// Bridge (docs/remote.md). simsync-bullet-host and simsync-mujoco-host use it
// with their own RemoteProtocol (what the observation holds, how a command is
// applied, which program the controller is).
//
// The remote controller is one lockstep, exclusive accessor of the host's
// handler, registered by the Bridge under the in-process controller's name and
// priority (kControllerName, kControllerPriority), with its first request at
// 0: the handler orders it exactly as the in-process controller. Inside each
// of its accesses, at the granted instant:
//   - grant: the host records the trajectory hash (Controller::record, or
//     Controller::finish at the end) and sends the observation
//     (RemoteProtocol::observe, in the frame of remote_wire.hpp);
//   - release: the host decodes the command and applies it
//     (RemoteProtocol::apply), where the in-process controller acts. A refused
//     command (a named WireError) is counted and never applied.
// So the trajectory hash is the in-process one, bit for bit, whatever the
// delays of the other process.
//
// Built only with the dds adapter (SIMSYNC_HOST_REMOTE); this header needs none
// of it. Example code, not library API.

#include "host_kit.hpp"
#include "remote_wire.hpp"

#include <simsync/core/handler.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace simsync::examples::host {

// What a host's remote controller is: its program, its payloads and what the
// host does with them. The functions run inside the controller's access, on
// the Bridge's loop. A value type.
struct RemoteProtocol {
    std::string host_program;       // "simsync-mujoco-host": its messages, a spawned run's tag
    std::string controller_program; // "simsync-mujoco-remote-controller": spawn runs it from beside the host
    // The format of the world's payloads (a MuJoCo model's sizes decide it).
    std::function<WireFormat(const World& world)> format;
    // The observation's flags and values at the access (after the hash was recorded).
    std::function<void(const Controller& controller, const World& world, ObservationFrame& observation)> observe;
    // Applies an accepted command's values (format().command_values of them).
    std::function<void(Controller& controller, World& world, const std::vector<double>& command)> apply;
    // Arguments the controller needs besides the link's (the model: --model FILE);
    // called once the world is made.
    std::function<std::vector<std::string>()> controller_args;
};

struct RemoteControllerOptions {
    enum class Mode {
        spawn, // the host starts the controller program as its child
        wait,  // the host waits for one started by the user
    };
    Mode mode = Mode::spawn;
    std::uint32_t domain = 0;
    bool loopback = true; // else Cyclone's defaults (the network, multicast)
    std::string tag;      // Cyclone discovery tag; "" = none
    std::string partition = "simsync";
    // What the controller needs besides these (RemoteProtocol::controller_args).
    std::vector<std::string> controller_args;
    // spawn: the program (a path), and what the child gets as --random-delay-us / --seed.
    std::string program;
    std::int64_t delay_us = 0;
    std::uint64_t seed = 0;
    double join_timeout_s = 30;
    // Fault tests (--remote-xmit-loss): Cyclone DDS drops this many of every
    // 1000 packets the host sends, and the controller gets the same (its
    // --xmit-loss), so both directions lose them.
    int xmit_loss_per_mille = 0;
    // The liveliness lease of the Bridge and (spawn) of the controller (its
    // --lease); 0: the default, 1 s.
    double lease_s = 0;
    // DDS Security: the host's security file (its Bridge's participant), and
    // spawn: the controller's (its --security). "": none, a trusted network only.
    std::string security;
    std::string controller_security;
};

// Cyclone DDS's own fault injection (Internal/Test/XmitLossiness): the
// DomainConfig::extra_xml with which a process drops `per_mille` of every 1000
// packets it sends. Each process that gets it says so on stderr, naming this
// XML, so a test can see that both sides lose packets.
inline std::string xmit_loss_xml(int per_mille)
{
    return "<Internal><Test><XmitLossiness>" + std::to_string(per_mille) + "</XmitLossiness></Test></Internal>";
}

// The command line that starts a controller matching `options` (what spawn
// runs; what wait prints for the user).
std::vector<std::string> remote_controller_command(const RemoteControllerOptions& options);

// What the link did. A value type.
struct RemoteControllerStats {
    std::uint64_t grants = 0;   // observations sent
    std::uint64_t commands = 0; // commands applied
    SimTime last_grant{};
    bool done = false;          // the final access (at the end) was served
    WireErrorCounts refused;    // commands refused, by reason
    std::string first_refusal;  // "at <t> s: <reason>", for the report
    std::uint64_t bridge_rejected = 0; // samples the Bridge dropped (malformed, foreign, ...)
    std::optional<int> child_status;   // spawn: the child's exit status (128 + signal if killed)
};

// The Bridge, its DDS participant and (spawn) the child process.
// Copy/move: neither. Thread safety: construct, wait and destroy on one thread;
// the payload callbacks run on the Bridge's loop inside the accesses.
// `handler`, `controller` must outlive it.
class RemoteControllerLink {
public:
    // Creates the Bridge on the domain; spawn: starts the child.
    // @throws std::exception (simsync::Error, std::runtime_error) naming what failed.
    RemoteControllerLink(SimSyncHandler& handler, Controller& controller, SimTime end,
                         const RemoteControllerOptions& options, RemoteProtocol protocol);
    ~RemoteControllerLink();
    RemoteControllerLink(const RemoteControllerLink&) = delete;
    RemoteControllerLink& operator=(const RemoteControllerLink&) = delete;

    // Blocks until the controller has joined (the handler has it registered).
    // Woken by the Bridge's on_joined, the handler's stop and the child's exit;
    // nothing is polled.
    // @throws std::runtime_error after join_timeout_s, or if the child exited,
    //         the handler stopped, or another participant joined first.
    void wait_joined();
    // Blocks until the final access has been served (true), or the handler
    // stopped, the child exited, or the controller left first (false): it
    // left, or it was revoked when its liveliness lease expired (the Bridge's
    // on_left). No timeout: one of these always comes.
    bool wait_done();
    // After the handler stopped: waits (a few seconds at most, then kills it)
    // for the child to exit, and returns the stats.
    RemoteControllerStats finish();
    RemoteControllerStats stats() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// The link serving the controller in another process, as the host kit's
// RemoteController.
std::unique_ptr<RemoteController> make_remote_controller(SimSyncHandler& handler, Controller& controller, SimTime end,
                                                         const RemoteControllerOptions& options,
                                                         RemoteProtocol protocol);

} // namespace simsync::examples::host
