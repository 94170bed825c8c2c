#pragma once
// simsync-bullet-host --remote-controller: the host's side of a controller in
// another process (simsync-remote-controller), over Cyclone DDS through the dds
// adapter's Bridge (docs/remote.md).
//
// The remote controller is one lockstep, exclusive accessor of the host's
// handler, registered by the Bridge under the in-process controller's name and
// priority, with its first request at 0: the handler orders it exactly as the
// in-process controller. Inside each of its accesses, at the granted instant:
//   - grant: the host records the trajectory hash (Controller::record, or
//     Controller::finish at the end) and sends the pushed body's observation
//     (controller_wire.hpp);
//   - release: the host decodes the command and applies its impulse
//     (Controller::apply), where the in-process controller pushes. A refused
//     command (a named WireError) is counted and never applied.
// So the trajectory hash is the in-process one, bit for bit, whatever the
// delays of the other process.
//
// Built only with the dds adapter (SIMSYNC_BULLET_HOST_REMOTE); this header
// needs none of it. Example code, not library API.

#include "controller.hpp"
#include "controller_wire.hpp"

#include <simsync/handler.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace simsync::examples::bullet_host {

struct RemoteControllerOptions {
    enum class Mode {
        spawn, // the host starts simsync-remote-controller as its child
        wait,  // the host waits for one started by the user
    };
    Mode mode = Mode::spawn;
    std::uint32_t domain = 0;
    bool loopback = true; // else Cyclone's defaults (the network, multicast)
    std::string tag;      // Cyclone discovery tag; "" = none
    std::string partition = "simsync";
    // spawn: the program, and what the child gets as --random-delay-us / --seed.
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
                         const RemoteControllerOptions& options);
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

} // namespace simsync::examples::bullet_host
