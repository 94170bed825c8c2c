#include "remote_link.hpp"

#include <simsync/dds/bridge.hpp>
#include <simsync/dds/domain.hpp>
#include <simsync/dds/scenario.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <optional>
#include <string>
#include <thread>

extern char** environ;

namespace simsync::examples::host {

namespace sd = simsync::dds;
using namespace std::chrono_literals;

namespace {
std::string seconds_text(double s)
{
    char text[32];
    std::snprintf(text, sizeof text, "%g", s);
    return text;
}
} // namespace

std::vector<std::string> remote_controller_command(const RemoteControllerOptions& o)
{
    std::vector<std::string> argv{o.program, "--domain", std::to_string(o.domain),
                                  "--network", o.loopback ? "loopback" : "system",
                                  "--partition", o.partition};
    argv.insert(argv.end(), o.controller_args.begin(), o.controller_args.end());
    if (!o.tag.empty()) argv.insert(argv.end(), {"--tag", o.tag});
    if (o.xmit_loss_per_mille > 0) argv.insert(argv.end(), {"--xmit-loss", std::to_string(o.xmit_loss_per_mille)});
    if (o.lease_s > 0) argv.insert(argv.end(), {"--lease", seconds_text(o.lease_s)});
    if (o.mode == RemoteControllerOptions::Mode::spawn && !o.controller_security.empty()) {
        argv.insert(argv.end(), {"--security", o.controller_security});
    } else if (o.mode == RemoteControllerOptions::Mode::wait && !o.security.empty()) {
        argv.insert(argv.end(), {"--security", "<the controller's security file>"});
    }
    if (o.mode == RemoteControllerOptions::Mode::spawn) {
        argv.insert(argv.end(), {"--random-delay-us", std::to_string(o.delay_us), "--seed", std::to_string(o.seed),
                                 "--join-timeout", seconds_text(o.join_timeout_s)});
    }
    return argv;
}

struct RemoteControllerLink::Impl {
    SimSyncHandler& handler;
    Controller& controller;
    SimTime end;
    RemoteControllerOptions options;
    RemoteProtocol protocol;

    mutable std::mutex mutex;
    std::condition_variable cv;
    RemoteControllerStats stats; // guarded by mutex
    // Guarded by mutex, notified on `cv` by whoever learns it: the handler's
    // stopped event, the Bridge's on_joined / on_left (its loop thread), the
    // reaper. Nothing here is polled.
    bool stopped = false;            // the handler stopped
    bool child_exited = false;
    bool joined = false;             // the controller joined
    std::string stranger;            // a participant that is not the controller joined first
    std::optional<sd::LeaveReason> left; // the controller is no longer registered

    pid_t child = -1;
    std::thread reaper;
    Subscription stop_events;
    std::unique_ptr<sd::Bridge> bridge;

    Impl(SimSyncHandler& h, Controller& c, SimTime e, const RemoteControllerOptions& o, RemoteProtocol p)
        : handler(h), controller(c), end(e), options(o), protocol(std::move(p))
    {
    }

    // Called inside the controller's access, on the Bridge's loop.
    std::vector<std::uint8_t> grant(const sd::RemoteParticipantInfo& who, Access& access)
    {
        if (who.name != kControllerName) return {}; // not ours: it gets no observation
        const World& world = access.world();
        const SimTime t = access.granted_time();
        ObservationFrame observation{.granted = t, .end = end, .final = t >= end, .flags = 0, .values = {}};
        if (observation.final) {
            controller.finish(world);
        } else {
            controller.record(world);
        }
        protocol.observe(controller, world, observation);
        std::lock_guard<std::mutex> g(mutex);
        ++stats.grants;
        stats.last_grant = t;
        return encode(protocol.format(world), observation);
    }

    // Called inside the controller's access, on the Bridge's loop, just before
    // it is released.
    void release(const sd::RemoteParticipantInfo& who, Access& access, std::span<const std::uint8_t> bytes)
    {
        if (who.name != kControllerName) return;
        const SimTime t = access.granted_time();
        const bool final = t >= end;
        const CommandVerdict verdict = accept_command(protocol.format(access.world()), t, final, bytes);
        if (verdict.command) protocol.apply(controller, access.world(), verdict.command->values);
        std::lock_guard<std::mutex> g(mutex);
        if (verdict.command) ++stats.commands;
        if (const std::optional<WireError> error = verdict.refused) {
            stats.refused.add(*error);
            std::fprintf(stderr, "%s: remote controller: command at %s s refused: %s\n", protocol.host_program.c_str(),
                         format_seconds(t).c_str(), to_string(*error));
            if (stats.first_refusal.empty()) {
                stats.first_refusal = "at " + format_seconds(t) + " s: " + to_string(*error);
            }
        }
        if (final) {
            stats.done = true;
            cv.notify_all();
        }
    }

    void spawn()
    {
        const std::vector<std::string> argv = remote_controller_command(options);
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        // No operator input for the child; its output goes to our stderr, so our
        // stdout (the summary, trajectory_hash=) stays the host's alone.
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&actions, 2, 1);
        std::vector<char*> args;
        for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        const int rc = ::posix_spawn(&child, argv[0].c_str(), &actions, nullptr, args.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        if (rc != 0) {
            child = -1;
            throw std::runtime_error("cannot start the remote controller " + argv[0] + ": " + std::strerror(rc) +
                                     " (--remote-program PATH)");
        }
        reaper = std::thread([this] {
            int status = 0;
            while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
            }
            std::lock_guard<std::mutex> g(mutex);
            child_exited = true;
            stats.child_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            cv.notify_all();
        });
    }

    // The Bridge's join and leave notifications, on its loop thread: they only
    // record and notify (they must not block the loop).
    void on_joined(const sd::RemoteParticipantInfo& who)
    {
        std::lock_guard<std::mutex> g(mutex);
        if (who.name == kControllerName) {
            joined = true;
        } else if (stranger.empty()) {
            stranger = who.name;
        }
        cv.notify_all();
    }
    void on_left(const sd::RemoteParticipantInfo& who, sd::LeaveReason reason)
    {
        if (who.name != kControllerName) return;
        std::lock_guard<std::mutex> g(mutex);
        if (!left) left = reason;
        cv.notify_all();
    }

    // Joins the reaper, killing the child first if it does not exit in time.
    void reap(std::chrono::seconds grace)
    {
        if (!reaper.joinable()) return;
        {
            std::unique_lock<std::mutex> lock(mutex);
            if (!cv.wait_for(lock, grace, [&] { return child_exited; })) ::kill(child, SIGKILL);
        }
        reaper.join();
    }
};

RemoteControllerLink::RemoteControllerLink(SimSyncHandler& handler, Controller& controller, SimTime end,
                                           const RemoteControllerOptions& options, RemoteProtocol protocol)
    : impl_(std::make_unique<Impl>(handler, controller, end, options, std::move(protocol)))
{
    Impl& m = *impl_;
    m.stop_events = handler.subscribe([&m](const HandlerEvent& e) {
        if (e.kind != HandlerEvent::Kind::stopped) return;
        std::lock_guard<std::mutex> g(m.mutex);
        m.stopped = true;
        m.cv.notify_all();
    });
    sd::DomainConfig domain = options.loopback ? sd::DomainConfig::loopback(options.domain) : sd::DomainConfig{};
    domain.id = options.domain;
    domain.tag = options.tag;
    if (options.xmit_loss_per_mille > 0) {
        domain.extra_xml = xmit_loss_xml(options.xmit_loss_per_mille);
        std::fprintf(stderr, "%s: fault injection: Cyclone DDS drops %d of every 1000 packets it sends (%s)\n",
                     m.protocol.host_program.c_str(), options.xmit_loss_per_mille, domain.extra_xml.c_str());
    }
    if (!options.security.empty()) domain.security = sd::load_security_file(options.security);
    sd::BridgeConfig bc;
    bc.partition = options.partition;
    // The controller, and no one else.
    bc.allowed_names = std::vector<std::string>{kControllerName};
    bc.max_participants = 1;
    if (options.lease_s > 0) {
        bc.lease = std::chrono::duration_cast<WallClock::duration>(std::chrono::duration<double>(options.lease_s));
    }
    bc.grant_payload = [&m](const sd::RemoteParticipantInfo& who, Access& a) { return m.grant(who, a); };
    bc.apply_release = [&m](const sd::RemoteParticipantInfo& who, Access& a, std::span<const std::uint8_t> b) {
        m.release(who, a, b);
    };
    bc.on_joined = [&m](const sd::RemoteParticipantInfo& who) { m.on_joined(who); };
    bc.on_left = [&m](const sd::RemoteParticipantInfo& who, sd::LeaveReason reason) { m.on_left(who, reason); };
    m.bridge = std::make_unique<sd::Bridge>(handler, sd::Participant::create(domain), bc);
    if (options.mode == RemoteControllerOptions::Mode::spawn) m.spawn();
}

RemoteControllerLink::~RemoteControllerLink()
{
    Impl& m = *impl_;
    m.bridge.reset(); // before the child is killed: it is told the simulation stopped
    m.reap(5s);
    m.stop_events.reset();
}

void RemoteControllerLink::wait_joined()
{
    Impl& m = *impl_;
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(m.options.join_timeout_s));
    std::unique_lock<std::mutex> lock(m.mutex);
    // One wait: the Bridge's on_joined, the handler's stop and the reaper wake
    // it; only the join timeout is a deadline.
    m.cv.wait_until(lock, deadline, [&] {
        return m.joined || !m.stranger.empty() || m.stopped || m.child_exited;
    });
    if (m.joined) return;
    if (!m.stranger.empty()) {
        throw std::runtime_error("a remote participant that is not the controller joined ('" + m.stranger +
                                 "', expected '" + std::string(kControllerName) + "')");
    }
    if (m.child_exited) {
        throw std::runtime_error("the remote controller exited with status " + std::to_string(*m.stats.child_status) +
                                 " before it joined");
    }
    if (m.stopped) throw std::runtime_error("the simulation stopped before the remote controller joined");
    char text[96];
    std::snprintf(text, sizeof text, "no remote controller joined within %g s (--remote-join-timeout)",
                  m.options.join_timeout_s);
    throw std::runtime_error(text);
}

bool RemoteControllerLink::wait_done()
{
    Impl& m = *impl_;
    std::unique_lock<std::mutex> lock(m.mutex);
    // The final release (done), the handler's stop, the child's exit and the
    // controller's leave (the Bridge's on_left: it left, or it was revoked
    // when its liveliness lease expired) each notify: no timed re-checks.
    m.cv.wait(lock, [&] { return m.stats.done || m.stopped || m.child_exited || m.left.has_value(); });
    return m.stats.done;
}

RemoteControllerStats RemoteControllerLink::finish()
{
    Impl& m = *impl_;
    m.reap(10s);
    RemoteControllerStats s = stats();
    s.bridge_rejected = m.bridge->stats().rejected.total();
    return s;
}

RemoteControllerStats RemoteControllerLink::stats() const
{
    std::lock_guard<std::mutex> g(impl_->mutex);
    return impl_->stats;
}

namespace {

// The link as the host kit's remote controller: what the host prints about it
// and how its stats become the run's outcome.
class RemoteHost final : public RemoteController {
public:
    RemoteHost(SimSyncHandler& handler, Controller& controller, SimTime end, const RemoteControllerOptions& options,
               RemoteProtocol protocol)
        : controller_program_(protocol.controller_program),
          link_(handler, controller, end, options, std::move(protocol))
    {
        if (options.mode == RemoteControllerOptions::Mode::wait) {
            std::string command;
            for (const std::string& a : remote_controller_command(options)) command += (command.empty() ? "" : " ") + a;
            std::printf("waiting up to %g s for the remote controller: %s\n", options.join_timeout_s, command.c_str());
            std::fflush(stdout);
        }
    }
    void wait_joined() override
    {
        link_.wait_joined();
        std::printf("remote controller joined\n");
        std::fflush(stdout);
    }
    bool wait_done() override { return link_.wait_done(); }
    Outcome finish(const std::string& kit_failure, bool quit) override
    {
        const RemoteControllerStats rs = link_.finish();
        Outcome out{.grants = rs.grants, .last_grant = rs.last_grant, .summary = {}, .failure = kit_failure};
        if (!out.failure.empty() && rs.child_status) {
            const int st = *rs.child_status;
            out.failure = controller_program_ + " " +
                          (st > 128 ? "was killed by signal " + std::to_string(st - 128)
                                    : "exited with status " + std::to_string(st)) +
                          " before the end of the run";
        }
        if (out.failure.empty() && rs.refused.total() > 0) {
            out.failure = std::to_string(rs.refused.total()) + " command(s) refused, the first " + rs.first_refusal;
        }
        if (out.failure.empty() && !quit && rs.child_status && *rs.child_status != 0) {
            out.failure = controller_program_ + " exited with status " + std::to_string(*rs.child_status);
        }
        out.summary = "remote controller: " + std::to_string(rs.grants) + " observations sent, " +
                      std::to_string(rs.commands) + " commands applied, " + std::to_string(rs.refused.total()) +
                      " refused";
        out.summary += rs.refused.text();
        if (rs.bridge_rejected > 0) {
            out.summary += ", " + std::to_string(rs.bridge_rejected) + " samples dropped by the Bridge";
        }
        return out;
    }

private:
    std::string controller_program_;
    RemoteControllerLink link_;
};

} // namespace

std::unique_ptr<RemoteController> make_remote_controller(SimSyncHandler& handler, Controller& controller, SimTime end,
                                                         const RemoteControllerOptions& options,
                                                         RemoteProtocol protocol)
{
    return std::make_unique<RemoteHost>(handler, controller, end, options, std::move(protocol));
}

} // namespace simsync::examples::host
