#include "remote_link.hpp"

#include <simsync/bullet/bullet.hpp>
#include <simsync/dds/bridge.hpp>
#include <simsync/dds/domain.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace simsync::examples::bullet_host {

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
    std::vector<std::string> argv{o.program.empty() ? std::string("simsync-remote-controller") : o.program,
                                  "--domain", std::to_string(o.domain),
                                  "--network", o.loopback ? "loopback" : "system",
                                  "--partition", o.partition};
    if (!o.tag.empty()) argv.insert(argv.end(), {"--tag", o.tag});
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

    mutable std::mutex mutex;
    std::condition_variable cv;
    RemoteControllerStats stats; // guarded by mutex
    bool stopped = false;        // guarded by mutex: the handler stopped
    bool child_exited = false;   // guarded by mutex

    pid_t child = -1;
    std::thread reaper;
    Subscription stop_events;
    std::unique_ptr<sd::Bridge> bridge;

    Impl(SimSyncHandler& h, Controller& c, SimTime e, const RemoteControllerOptions& o)
        : handler(h), controller(c), end(e), options(o)
    {
    }

    // Called inside the controller's access, on the Bridge's loop.
    std::vector<std::uint8_t> grant(const sd::RemoteParticipantInfo& who, Access& access)
    {
        if (who.name != kControllerName) return {}; // not ours: it gets no observation
        auto& world = access.world_as<sb::BulletWorld>();
        const SimTime t = access.granted_time();
        const bool final = t >= end;
        if (final) {
            controller.finish(world);
        } else {
            controller.record(world);
        }
        std::lock_guard<std::mutex> g(mutex);
        ++stats.grants;
        stats.last_grant = t;
        return encode(Observation{.granted = t, .end = end, .final = final, .body = controller.observe(world)});
    }

    // Called inside the controller's access, on the Bridge's loop, just before
    // it is released.
    void release(const sd::RemoteParticipantInfo& who, Access& access, std::span<const std::uint8_t> bytes)
    {
        if (who.name != kControllerName) return;
        const SimTime t = access.granted_time();
        const bool final = t >= end;
        std::optional<WireError> error;
        std::optional<Command> command;
        if (final) {
            if (!bytes.empty()) error = WireError::unexpected_command;
        } else if (bytes.empty()) {
            error = WireError::missing_command;
        } else if (WireDecoded<Command> d = decode_command(bytes); !d) {
            error = d.error;
        } else if (d.value->granted != t) {
            error = WireError::stale_command;
        } else {
            command = d.value;
        }
        if (command) controller.apply(access.world_as<sb::BulletWorld>(), command->impulse);
        std::lock_guard<std::mutex> g(mutex);
        if (command) ++stats.commands;
        if (error) {
            stats.refused.add(*error);
            std::fprintf(stderr, "simsync-bullet-host: remote controller: command at %s s refused: %s\n",
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
                                           const RemoteControllerOptions& options)
    : impl_(std::make_unique<Impl>(handler, controller, end, options))
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
    sd::BridgeConfig bc;
    bc.partition = options.partition;
    bc.grant_payload = [&m](const sd::RemoteParticipantInfo& who, Access& a) { return m.grant(who, a); };
    bc.apply_release = [&m](const sd::RemoteParticipantInfo& who, Access& a, std::span<const std::uint8_t> b) {
        m.release(who, a, b);
    };
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
    // The Bridge says when a participant registers, the reaper when the child
    // dies first: wait for either, in short slices (only while joining).
    for (;;) {
        if (m.bridge->wait_for_participants(1, 100ms)) {
            const std::vector<std::string> names = m.bridge->participants();
            if (std::find(names.begin(), names.end(), kControllerName) != names.end()) return;
            throw std::runtime_error("a remote participant that is not the controller joined (expected '" +
                                     std::string(kControllerName) + "')");
        }
        std::lock_guard<std::mutex> g(m.mutex);
        if (m.child_exited) {
            throw std::runtime_error("the remote controller exited with status " +
                                     std::to_string(*m.stats.child_status) + " before it joined");
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            char text[96];
            std::snprintf(text, sizeof text, "no remote controller joined within %g s (--remote-join-timeout)",
                          m.options.join_timeout_s);
            throw std::runtime_error(text);
        }
    }
}

bool RemoteControllerLink::wait_done()
{
    Impl& m = *impl_;
    std::unique_lock<std::mutex> lock(m.mutex);
    // The final release, the handler's stop and the child's exit notify; a
    // controller that leaves without a release at the end (wait mode, where no
    // child is watched) is seen in the Bridge's counts: checked every 250 ms.
    // The DDS liveliness lease (issue 13, point 4) will make that an event too.
    for (;;) {
        if (m.stats.done) return true;
        if (m.stopped || m.child_exited) return false;
        lock.unlock();
        const bool left = m.bridge->stats().leaves > 0;
        lock.lock();
        if (left && !m.stats.done) return false;
        m.cv.wait_for(lock, 250ms, [&] { return m.stats.done || m.stopped || m.child_exited; });
    }
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

} // namespace simsync::examples::bullet_host
