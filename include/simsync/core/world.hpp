#pragma once
/// @file
/// The world interface: what a SimSyncHandler advances.

#include <simsync/core/time.hpp>

#include <atomic>
#include <cstdint>

namespace simsync {

/// What a SimSyncHandler steps: a physics engine adapter, or anything else that
/// advances by a fixed `dt`.
///
/// Copy/move: an interface; implementations decide.
///
/// Call sequence and concurrency (the handler guarantees all of it):
///  - `step(dt)` is called only by the handler, always with the handler's fixed `dt`;
///  - never two `step` calls at once, and never while any access is held, so a step
///    sees no concurrent reader or writer and needs no locking of its own;
///  - which thread calls `step` is the handler's StepThread choice: any thread that
///    is waiting for the next grant (the default), or only the host thread inside
///    `SimSyncHandler::run()`;
///  - between steps, accessors read (shared access) or write (exclusive access) the
///    world through `Access::world()`; shared readers may run concurrently with each
///    other, so reads must not mutate.
/// If `step` throws, the handler stops and reports the failure; the world is then
/// in whatever state the engine left it.
class World {
public:
    virtual ~World() = default;

    /// Advances the world by exactly `dt`.
    virtual void step(SimDuration dt) = 0;
};

/// A trivial world for tests and examples: counts its steps and the simulated
/// time they add up to, and carries one value that accessors may read or write.
///
/// Copy/move: neither (accessors hold references to it).
/// Thread safety: the counters are atomic so that a test may read them from any
/// thread, including outside an access, to check the handler's invariants.
class CountingWorld final : public World {
public:
    CountingWorld() = default;
    CountingWorld(const CountingWorld&) = delete;
    CountingWorld& operator=(const CountingWorld&) = delete;

    void step(SimDuration dt) override;

    /// Number of `step` calls so far.
    std::uint64_t steps() const noexcept { return steps_.load(std::memory_order_acquire); }
    /// Sum of the `dt` of all steps: the world's own idea of the time.
    SimTime time() const noexcept
    {
        return SimTime{SimDuration{elapsed_ns_.load(std::memory_order_acquire)}};
    }

    /// A value for accessors to write (exclusive access) and read (any access).
    std::int64_t value = 0;

private:
    std::atomic<std::uint64_t> steps_{0};
    std::atomic<std::int64_t> elapsed_ns_{0};
};

} // namespace simsync
