#pragma once
// The controller of simsync-bullet-host: one control law and one schedule for
// every place it runs, so they all push box_0 with the same bits at the same
// instants:
//   - in process: a thread of the host (or the no-threads reference loop) calls
//     Controller::tick inside its exclusive access;
//   - in another process: simsync-remote-controller computes push_impulse from
//     the observation the host sent with the grant (controller_wire.hpp), and the
//     host applies the impulse it sends back inside the same access (the host
//     kit's remote_link.hpp).
// Example code, not library API.

#include <simsync/bullet/bullet.hpp>
#include <simsync/core/time.hpp>

#include <cstdint>

namespace simsync::examples::bullet_host {

namespace sb = simsync::bullet;

// The controller's rate, name, priority and schedule are the host kit's
// (host_kit.hpp: kControllerHz, kControllerName, controller_instant), shared
// with the MuJoCo host and with every remote controller.

// What the controller reads: the state and mass of the body it pushes.
struct PushObservation {
    sb::BodyState state;
    double mass = 0;
};

// The control law, the one function every controller runs: steer the body onto
// a 2 m circle around the origin at 1.5 m/s, right through the stacks (a
// velocity controller, so the pushes stay bounded: at most 0.5 m/s of change
// per push). Returns the impulse (N s) to apply at once. A pure function of its
// argument: the same observation gives the same bits in any process of the
// same build.
sb::Vec3 push_impulse(const PushObservation& observation);

// The host's side of the controller: records the trajectory hash at every tick
// and at the end, reads the observation and applies the push. Whoever computes
// the push (this object, or a remote process given observe()'s result), the
// host applies it through apply(), so the world sees the same writes.
//
// Copy/move: value type. Thread safety: none (used inside the controller's
// exclusive access, or by the one reference thread).
class Controller {
public:
    // Pushes body `pushed` (the scene's first body: box_0 in the default scene).
    explicit Controller(sb::BodyIndex pushed = 0) : pushed_(pushed) {}

    // An in-process tick: record the state, then push.
    void tick(sb::BulletWorld& world)
    {
        record(world);
        push(world);
    }
    // Adds the whole world's state to the hash (the first half of a tick).
    void record(const sb::BulletWorld& world) { world.hash_state(hash_); }
    // The second half of an in-process tick: observe, compute, apply.
    void push(sb::BulletWorld& world) { apply(world, push_impulse(observe(world))); }
    PushObservation observe(const sb::BulletWorld& world) const;
    // Applies an impulse computed by push_impulse (here or in another process).
    void apply(sb::BulletWorld& world, sb::Vec3 impulse);
    // At the end of the run.
    void finish(const sb::BulletWorld& world);

    sb::BodyIndex pushed() const { return pushed_; }
    const sb::TrajectoryHash& hash() const { return hash_; }
    std::uint64_t pushes() const { return pushes_; }
    sb::Vec3 last_position() const { return last_position_; }
    std::uint64_t steps_at_end() const { return steps_at_end_; }

private:
    sb::BodyIndex pushed_;
    sb::TrajectoryHash hash_;
    std::uint64_t pushes_ = 0;
    sb::Vec3 last_position_;
    std::uint64_t steps_at_end_ = 0;
};

} // namespace simsync::examples::bullet_host
