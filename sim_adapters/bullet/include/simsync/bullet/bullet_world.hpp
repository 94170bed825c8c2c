#pragma once
/// @file
/// BulletWorld: a Bullet Physics rigid-body world behind simsync::World.
///
/// This header includes no Bullet header; only BulletWorld::native() names a
/// Bullet type (forward-declared), for users who include Bullet themselves.

#include <simsync/bullet/scene.hpp>
#include <simsync/bullet/trajectory_hash.hpp>
#include <simsync/core/time.hpp>
#include <simsync/core/world.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

class btDiscreteDynamicsWorld;

namespace simsync::bullet {

/// The full dynamic state of one body at one instant.
struct BodyState {
    Pose pose{};
    Vec3 linear_velocity{};
    Vec3 angular_velocity{};
    /// False while Bullet has put the body to sleep (it does not move).
    bool awake = true;
};

/// Index of a body: its position in SceneDescription::bodies.
using BodyIndex = std::size_t;

/// A Bullet `btDiscreteDynamicsWorld` (with its broadphase, collision dispatcher,
/// constraint solver and collision configuration) built from a SceneDescription,
/// stepped by a SimSyncHandler.
///
/// **One call, one step.** `step(dt)` advances Bullet by exactly one internal step
/// of `dt`: `stepSimulation(dt, 0, dt)`. With `maxSubSteps = 0` Bullet takes the
/// given time step as the one and only substep, keeps no fixed-step accumulator
/// and does no motion-state interpolation. The default (`maxSubSteps = 1`,
/// fixed 1/60 s) would accumulate wall-clock-sized remainders in floating point
/// and take zero or several substeps per call, so the state at simulated time T
/// would depend on how T was reached. Here it depends only on the number of
/// steps. Bodies have no motion state: what accessors read is the simulated
/// state itself, never an interpolated picture of it.
///
/// **Reads** (any access, shared or exclusive): the `const` members. They do not
/// touch Bullet's mutable state, so several shared accesses may read at once.
/// **Writes** (exclusive access only): the non-`const` body members. They must
/// only be called while holding an exclusive access: nothing here locks, and a
/// write during a shared access races with the other readers. A write wakes the
/// body if Bullet had put it to sleep.
/// **Forces** applied with apply_central_force / apply_torque accumulate until the
/// next step, act during exactly that step and are then cleared: a force applied
/// at T changes nothing at T and acts on the interval [T, T + dt] only.
/// **Impulses and velocity/pose setters** change the state at once (readers later
/// in the same instant see it).
///
/// Copy/move: neither (the handler and accessors hold references to it).
/// Thread safety: distinct objects: safe. Shared objects: as World: `step` by the
/// handler alone, never during an access; `const` members concurrently with each
/// other; non-`const` members alone. Bullet has no thread affinity here, so
/// `step` may run on whichever thread the handler chooses (StepThread::any).
///
/// @code
/// simsync::bullet::BulletWorld world(simsync::bullet::default_scene());
/// simsync::SimSyncHandler handler(world, {.step = 1ms});
/// auto controller = handler.register_accessor("controller");   // exclusive
/// simsync::Access a = controller.request_access(simsync::sim_time(10ms));
/// auto& w = a.world_as<simsync::bullet::BulletWorld>();
/// w.apply_central_impulse(w.body_index("box_0"), {0.5, 0, 0});
/// @endcode
class BulletWorld final : public World {
public:
    /// Builds the Bullet world and every body of `scene`, in order.
    /// @throws simsync::Error (invalid_argument) as validate(scene).
    explicit BulletWorld(const SceneDescription& scene);
    ~BulletWorld() override;
    BulletWorld(const BulletWorld&) = delete;
    BulletWorld& operator=(const BulletWorld&) = delete;

    /// Advances by exactly one Bullet step of `dt` (see the class comment).
    /// Called by the handler only.
    /// @throws simsync::Error (invalid_argument) if `dt <= 0`; (invalid_state) if
    ///         Bullet took other than one internal step (a broken invariant).
    void step(SimDuration dt) override;

    // ---- Reads: any access -------------------------------------------------------

    std::size_t body_count() const noexcept;
    /// @throws simsync::Error (invalid_argument) if `index >= body_count()`.
    const std::string& body_name(BodyIndex index) const;
    std::optional<BodyIndex> find_body(std::string_view name) const;
    /// @throws simsync::Error (invalid_argument) if no body has that name.
    BodyIndex body_index(std::string_view name) const;
    /// @throws simsync::Error (invalid_argument) if `index >= body_count()`.
    double body_mass(BodyIndex index) const;

    /// @throws simsync::Error (invalid_argument) if `index >= body_count()`.
    Pose pose(BodyIndex index) const;
    /// @throws simsync::Error (invalid_argument) if `index >= body_count()`.
    BodyState state(BodyIndex index) const;

    /// Feeds the exact bytes (Bullet's own scalars) of every body's position,
    /// orientation, linear and angular velocity, in body order, into `hash`.
    void hash_state(TrajectoryHash& hash) const;
    /// FNV-1a of the current state alone (as hash_state into a fresh hash).
    std::uint64_t state_hash() const;

    /// Number of `step` calls so far.
    std::uint64_t steps() const noexcept;
    /// The sum of the `dt` of all steps: the world's own clock.
    SimTime time() const noexcept;
    /// Number of internal simulation steps Bullet took (counted by its internal
    /// tick callback): equal to steps() by construction.
    std::uint64_t internal_steps() const noexcept;
    /// The time step (seconds) Bullet used in its last internal step.
    double last_internal_step_seconds() const noexcept;
    /// True if btScalar is double (Bullet's float64 build).
    static bool double_precision() noexcept;

    // ---- Writes: exclusive access only -------------------------------------------
    // Each throws simsync::Error (invalid_argument) for an index out of range or a
    // static body (mass 0).

    /// Adds a force (N) at the centre of mass, acting during the next step only.
    void apply_central_force(BodyIndex index, Vec3 force);
    /// Adds a torque (N m), acting during the next step only.
    void apply_torque(BodyIndex index, Vec3 torque);
    /// Changes the linear velocity by `impulse / mass` now.
    void apply_central_impulse(BodyIndex index, Vec3 impulse);
    void set_linear_velocity(BodyIndex index, Vec3 velocity);
    void set_angular_velocity(BodyIndex index, Vec3 velocity);
    /// Moves the body (teleport); the orientation is normalised.
    void set_pose(BodyIndex index, const Pose& pose);

    /// The Bullet world itself, for what this class does not wrap. The same
    /// access rules apply: read it in any access, change it only in an exclusive
    /// one, and never call stepSimulation (the handler owns time). Requires the
    /// Bullet headers with the BT_USE_DOUBLE_PRECISION setting of the
    /// simsync::bullet target.
    btDiscreteDynamicsWorld& native() noexcept;
    const btDiscreteDynamicsWorld& native() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace simsync::bullet
