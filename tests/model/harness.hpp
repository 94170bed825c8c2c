#pragma once
// Runs a scenario on the real SimSyncHandler: one driver per accessor, an
// operator thread making pause/step/run_until/resume noise, a host thread in
// StepThread::host mode. Nothing here asserts: everything is recorded and the
// test thread checks it after the run (check.hpp).
//
// How an accessor waits is a Driver. What it does (its script, the probes and
// writes inside an access, the records) is its AccessorProgram, the same for
// every driver. Blocking threads (plain, timed, try-first), asynchronous
// callbacks, C++20 coroutines and inline systems on the stepping thread are one
// Driver subclass each; a new way of waiting is one more subclass and one more
// case in make_driver(); scenarios mix them and the same model checks the mix.

#include "model/observation.hpp"
#include "model/scenario.hpp"

#include <simsync/core/handler.hpp>
#include <simsync/core/world.hpp>

#include <boost/asio/io_context.hpp>

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>

namespace simsync::model {

/// The world of a model run: checks from inside every step and every access
/// that the handler keeps its promises, and carries the state the steady
/// accessors write.
class ProbeWorld final : public World {
public:
    explicit ProbeWorld(SimDuration dt) : dt_(dt) {}
    void step(SimDuration dt) override;

    SimTime time() const noexcept { return SimTime{SimDuration{elapsed_ns_.load(std::memory_order_acquire)}}; }
    std::uint64_t steps() const noexcept { return steps_.load(std::memory_order_acquire); }
    /// The time the world is being stepped to, from the moment a step begins
    /// (time() changes only when it ends).
    SimTime begun() const noexcept { return SimTime{SimDuration{begun_ns_.load(std::memory_order_acquire)}}; }

    /// Inside an access: counts an exclusive or shared holder in, checks it is
    /// allowed to be there, and out again.
    void enter(AccessMode mode);
    void leave(AccessMode mode);

    std::atomic<std::uint64_t> probe_violations{0};
    std::atomic<std::uint64_t> step_violations{0};
    /// Written only inside exclusive accesses: a data race here is an exclusion
    /// failure, which ThreadSanitizer reports.
    std::uint64_t det_hash = 0;
    std::uint64_t other_hash = 0;

private:
    SimDuration dt_;
    std::atomic<std::uint64_t> steps_{0};
    std::atomic<std::int64_t> elapsed_ns_{0};
    std::atomic<std::int64_t> begun_ns_{0};
    std::atomic<int> exclusive_inside_{0};
    std::atomic<int> shared_inside_{0};
    std::atomic<bool> stepping_{false};
};

/// Random sleeps and yields at the points a driver offers. A driver that must
/// not block (an inline system) offers none, or yields only.
class Noise {
public:
    Noise(const NoiseSpec& spec, std::uint64_t seed) : spec_(spec), rng_(seed) {}
    void pause_point();
    std::uint32_t uniform(std::uint32_t lo, std::uint32_t hi)
    {
        return std::uniform_int_distribution<std::uint32_t>(lo, hi)(rng_);
    }

private:
    NoiseSpec spec_;
    std::mt19937 rng_;
};

/// One accessor's behaviour, independent of how it waits. A driver calls
/// next_request() while the accessor is idle, makes the request its own way,
/// hands the outcome to on_outcome(), and calls finish() at the end. Calls for
/// one program never overlap (a driver serves one request at a time).
class AccessorProgram {
public:
    AccessorProgram(const Scenario& scenario, std::size_t index, SimSyncHandler& handler, Accessor& accessor,
                    ProbeWorld& world, std::uint64_t seed, const NoiseSpec& noise);

    /// The time to ask for next (the same again after a timed_out/would_block
    /// outcome), or nothing when the script is done. Performs the idle actions
    /// of a new step (set_kind) first.
    std::optional<SimTime> next_request();
    /// How many times the current request was made already (0 for the first).
    std::uint32_t attempt() const { return current_ ? current_->retries : 0; }
    /// The outcome of the request made for next_request()'s time; inside a
    /// granted access it runs the step's body and releases. `error` is the
    /// refusal (asynchronous completions pass it apart from the Access).
    void on_outcome(Access access) { on_outcome(access.error(), std::move(access)); }
    /// With `keep`: a release whose next time is the next step's request (and
    /// nothing happens in between) is not made here; the access moves to
    /// *keep, for the driver to release and ask again in one operation
    /// (release_and_request), which the model must not tell apart.
    void on_outcome(std::error_code error, Access access, Access* keep = nullptr);
    /// Deregisters (the script is done, or the driver gave up) and tells the run.
    void finish() noexcept;
    /// Called by finish(), once, from the driver's thread.
    std::function<void()> on_finish;
    /// Records an exception that escaped the driver; the run then fails.
    void fail(const std::string& what);

    Accessor& accessor() { return accessor_; }
    Noise& noise() { return noise_; }
    std::vector<RequestRecord> take_records() { return std::move(records_); }
    std::vector<std::string> take_errors() { return std::move(errors_); }

private:
    const Scenario& scenario_;
    const AccessorSpec& spec_;
    std::size_t index_;
    SimSyncHandler& handler_;
    Accessor& accessor_;
    ProbeWorld& world_;
    Noise noise_;
    std::size_t step_ = 0;
    std::optional<RequestRecord> current_;
    std::vector<RequestRecord> records_;
    std::vector<std::string> errors_;
};

/// How an accessor waits for its grants.
class Driver {
public:
    virtual ~Driver() = default;
    /// Starts serving the program; returns at once.
    virtual void start(AccessorProgram& program) = 0;
    /// Returns when the program has finished.
    virtual void join() = 0;
};

/// What drivers share in one run: an io_context served by a small thread pool
/// for the asynchronous drivers (made only if a scenario uses one).
struct DriverContext {
    boost::asio::io_context* io = nullptr;
};

std::unique_ptr<Driver> make_driver(DriverKind kind, std::uint64_t seed, DriverContext& context);

struct RunOptions {
    std::uint64_t noise_seed = 1;
    bool operator_noise = true; ///< false: no operator thread even if the scenario has one
    /// A run still going after this long is a stall: its snapshot is recorded as
    /// an error and the handler stopped, so a broken engine fails instead of hanging.
    std::chrono::seconds stall_after{30};
};

/// Runs the scenario once on real threads and returns what happened.
Observation run_on_engine(const Scenario& scenario, const RunOptions& options);

} // namespace simsync::model
