#include "model/harness.hpp"

#include <simsync/core/asio.hpp>
#include <simsync/core/error.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <sstream>
#include <limits>
#include <thread>

namespace simsync::model {

// ---------------------------------------------------------------- ProbeWorld

void ProbeWorld::step(SimDuration dt)
{
    if (stepping_.exchange(true, std::memory_order_acq_rel)) ++step_violations; // two steps at once
    if (exclusive_inside_.load() != 0 || shared_inside_.load() != 0) ++step_violations; // a step during an access
    if (dt != dt_) ++step_violations;
    begun_ns_.store(elapsed_ns_.load() + dt.count(), std::memory_order_release);
    elapsed_ns_.fetch_add(dt.count(), std::memory_order_acq_rel);
    steps_.fetch_add(1, std::memory_order_acq_rel);
    stepping_.store(false, std::memory_order_release);
}

void ProbeWorld::enter(AccessMode mode)
{
    if (stepping_.load()) ++probe_violations;
    if (mode == AccessMode::exclusive) {
        if (exclusive_inside_.fetch_add(1) != 0 || shared_inside_.load() != 0) ++probe_violations;
    } else {
        shared_inside_.fetch_add(1);
        if (exclusive_inside_.load() != 0) ++probe_violations;
    }
}

void ProbeWorld::leave(AccessMode mode)
{
    if (mode == AccessMode::exclusive) {
        if (shared_inside_.load() != 0) ++probe_violations;
        exclusive_inside_.fetch_sub(1);
    } else {
        if (exclusive_inside_.load() != 0) ++probe_violations;
        shared_inside_.fetch_sub(1);
    }
}

// --------------------------------------------------------------------- Noise

void Noise::pause_point()
{
    const std::uint32_t r = uniform(0, 99);
    if (r < static_cast<std::uint32_t>(spec_.sleep_percent)) {
        std::this_thread::sleep_for(std::chrono::microseconds(uniform(1, static_cast<std::uint32_t>(spec_.max_sleep_us))));
    } else if (r < static_cast<std::uint32_t>(spec_.sleep_percent + spec_.yield_percent)) {
        std::this_thread::yield();
    }
}

// ----------------------------------------------------------- AccessorProgram

AccessorProgram::AccessorProgram(const Scenario& scenario, std::size_t index, SimSyncHandler& handler,
                                 Accessor& accessor, ProbeWorld& world, std::uint64_t seed, const NoiseSpec& noise)
    : scenario_(scenario),
      spec_(scenario.accessors.at(index)),
      index_(index),
      handler_(handler),
      accessor_(accessor),
      world_(world),
      noise_(noise, seed)
{
}

std::optional<SimTime> AccessorProgram::next_request()
{
    if (current_) { // asking again after timed_out / would_block
        current_->now_before = handler_.now();
        return current_->requested;
    }
    if (step_ >= spec_.script.size()) return std::nullopt;
    const ScriptStep& s = spec_.script[step_];
    RequestRecord r;
    r.step = step_;
    if (s.switch_before) {
        accessor_.set_kind(*s.switch_before);
        r.switched_before = true;
    }
    r.kind = accessor_.kind();
    r.now_before = handler_.now();
    if (s.relative) {
        // A free accessor aims near the current time, never beyond the end.
        r.requested = std::min(r.now_before + s.request.time_since_epoch(), scenario_.end);
    } else {
        r.requested = s.request;
    }
    current_ = r;
    return r.requested;
}

void AccessorProgram::on_outcome(std::error_code error, Access access, Access* keep)
{
    RequestRecord& r = *current_;
    if (!access) {
        const std::error_code e = error ? error : access.error();
        if (e == errc::timed_out || e == errc::would_block || e == errc::cancelled) {
            ++r.retries;
            return; // the driver asks again
        }
        r.error = e;
        r.now_after = handler_.now();
        r.world_begun_after = world_.begun();
        if (e == errc::time_passed && round_to_grid(r.requested, scenario_.dt, scenario_.rounding) >= r.now_after) {
            // Refused as passed although now() has not passed it: see whether time
            // passes it soon (a step already decided) or stays (a wrong refusal).
            // Sleeping polls, bounded: this is rare and must not compete.
            const SimTime rounded = round_to_grid(r.requested, scenario_.dt, scenario_.rounding);
            const auto deadline = WallClock::now() + std::chrono::seconds(1);
            r.passed_later = std::max(handler_.now(), world_.begun());
            while (r.passed_later <= rounded && WallClock::now() < deadline) {
                std::this_thread::sleep_for(std::chrono::microseconds(50));
                r.passed_later = std::max(handler_.now(), world_.begun());
            }
        }
    } else {
        const ScriptStep& s = spec_.script[step_];
        r.granted = access.granted_time();
        r.sequence = access.sequence();
        r.mode = access.mode();
        r.world_at_granted = world_.time() == r.granted && handler_.now() == r.granted;
        world_.enter(r.mode);
        noise_.pause_point();
        if (r.mode == AccessMode::exclusive) {
            if (spec_.role == Role::steady) world_.det_hash = mix(world_.det_hash, index_, r.granted);
            else world_.other_hash = mix(world_.other_hash, index_, r.granted);
        } else {
            volatile std::uint64_t seen = world_.det_hash; // a read: races with a writer if exclusion fails
            (void)seen;
        }
        noise_.pause_point();
        world_.leave(r.mode);
        if (s.switch_inside) accessor_.set_kind(*s.switch_inside);
        r.kind_at_release = accessor_.kind();
        if (s.next) {
            r.next = s.relative ? r.granted + s.next->time_since_epoch() : *s.next;
            const bool fusable = keep != nullptr && step_ + 1 < spec_.script.size() && *r.next >= r.granted &&
                                 !spec_.script[step_ + 1].relative && !spec_.script[step_ + 1].switch_before &&
                                 spec_.script[step_ + 1].request == *r.next;
            try {
                if (fusable) {
                    r.fused = true;
                    *keep = std::move(access);
                } else {
                    access.release(*r.next);
                }
            } catch (const Error& e) {
                errors_.push_back(spec_.name + ": release(" + show(*r.next) + ") threw: " + e.what());
                access.release();
            }
        } else {
            access.release();
        }
    }
    records_.push_back(r);
    current_.reset();
    ++step_;
}

void AccessorProgram::finish() noexcept
{
    accessor_.deregister();
    if (on_finish) on_finish();
}

void AccessorProgram::fail(const std::string& what) { errors_.push_back(spec_.name + ": " + what); }

// ------------------------------------------------------------------- drivers

namespace {

// A thread per accessor, blocked in its request: the only way to wait today.
class BlockingDriver final : public Driver {
public:
    enum class Style { plain, timed, try_first };
    BlockingDriver(Style style, std::uint64_t seed) : style_(style), rng_(seed) {}
    ~BlockingDriver() override { join(); }

    void start(AccessorProgram& program) override
    {
        thread_ = std::thread([this, &program] {
            try {
                while (const auto t = program.next_request()) {
                    program.noise().pause_point();
                    program.on_outcome(ask(program, *t));
                }
            } catch (const std::exception& e) {
                program.fail(std::string("exception: ") + e.what());
            }
            program.finish();
        });
    }
    void join() override
    {
        if (thread_.joinable()) thread_.join();
    }

private:
    Access ask(AccessorProgram& program, SimTime t)
    {
        Accessor& a = program.accessor();
        switch (style_) {
        case Style::plain: return a.request_access(t);
        case Style::timed:
            // Short timeouts: many requests give up and ask again, the withdraw path.
            return a.request_access_for(t, std::chrono::microseconds(std::uniform_int_distribution<int>(20, 2000)(rng_)));
        case Style::try_first:
            return program.attempt() == 0 ? a.try_request_access(t) : a.request_access(t);
        }
        return a.request_access(t);
    }

    Style style_;
    std::mt19937 rng_;
    std::thread thread_;
};

// Waits until a program has finished (asynchronous drivers have no thread to join).
class Finished {
public:
    void set()
    {
        std::lock_guard<std::mutex> g(m_);
        done_ = true;
        cv_.notify_all();
    }
    void wait()
    {
        std::unique_lock<std::mutex> lock(m_);
        cv_.wait(lock, [&] { return done_; });
    }

private:
    std::mutex m_;
    std::condition_variable cv_;
    bool done_ = false;
};

// A callback completed on the shared io_context; now and then the request is
// cancelled through its cancellation slot right after it starts (the engine
// may have granted it already: either outcome is fine, a cancel is asked again).
class AsyncCallbackDriver final : public Driver {
public:
    AsyncCallbackDriver(boost::asio::io_context& io, std::uint64_t seed)
        : strand_(boost::asio::make_strand(io)), rng_(seed)
    {
    }
    ~AsyncCallbackDriver() override { join(); }
    void start(AccessorProgram& program) override
    {
        program_ = &program;
        boost::asio::post(strand_, [this] { next(); });
    }
    void join() override
    {
        if (program_ != nullptr) finished_.wait();
    }

private:
    void next()
    {
        try {
            const auto t = program_->next_request();
            if (!t) {
                program_->finish();
                finished_.set();
                return;
            }
            program_->noise().pause_point();
            const bool cancel = std::uniform_int_distribution<int>(0, 99)(rng_) < 15;
            program_->accessor().async_request_access(
                *t, boost::asio::bind_cancellation_slot(
                        signal_.slot(), boost::asio::bind_executor(strand_, [this](std::error_code e, Access a) {
                            program_->on_outcome(e, std::move(a));
                            next();
                        })));
            if (cancel) signal_.emit(boost::asio::cancellation_type::terminal);
        } catch (const std::exception& e) {
            program_->fail(std::string("exception: ") + e.what());
            program_->finish();
            finished_.set();
        }
    }

    // One strand per accessor: its completion never runs while next() still
    // uses the cancellation signal on another pool thread.
    boost::asio::strand<boost::asio::io_context::executor_type> strand_;
    std::mt19937 rng_;
    boost::asio::cancellation_signal signal_;
    AccessorProgram* program_ = nullptr;
    Finished finished_;
};

// A C++20 coroutine on the shared io_context, one co_await per request.
class CoroutineDriver final : public Driver {
public:
    explicit CoroutineDriver(boost::asio::io_context& io) : io_(io) {}
    ~CoroutineDriver() override { join(); }
    void start(AccessorProgram& program) override
    {
        program_ = &program;
        boost::asio::co_spawn(io_, run(program), [this](std::exception_ptr e) {
            if (e) {
                try {
                    std::rethrow_exception(e);
                } catch (const std::exception& x) {
                    program_->fail(std::string("exception: ") + x.what());
                }
            }
            program_->finish();
            finished_.set();
        });
    }
    void join() override
    {
        if (program_ != nullptr) finished_.wait();
    }

private:
    static boost::asio::awaitable<void> run(AccessorProgram& program)
    {
        while (const auto t = program.next_request()) {
            program.noise().pause_point();
            auto [error, access] =
                co_await program.accessor().async_request_access(*t, boost::asio::as_tuple(boost::asio::use_awaitable));
            program.on_outcome(error, std::move(access));
        }
    }

    boost::asio::io_context& io_;
    AccessorProgram* program_ = nullptr;
    Finished finished_;
};

// An inline system: completed on the thread that steps the world (or makes the
// grant possible), re-arming itself from inside its completion. It never sleeps
// there: the stepping thread is everybody's.
class InlineSystemDriver final : public Driver {
public:
    InlineSystemDriver() = default;
    ~InlineSystemDriver() override { join(); }
    void start(AccessorProgram& program) override
    {
        program_ = &program;
        next();
    }
    void join() override
    {
        if (program_ != nullptr) finished_.wait();
    }

private:
    void next()
    {
        try {
            const auto t = program_->next_request();
            if (!t) {
                program_->finish();
                finished_.set();
                return;
            }
            program_->accessor().async_request_access(*t, run_inline([this](std::error_code e, Access a) {
                                                          program_->on_outcome(e, std::move(a));
                                                          next();
                                                      }));
        } catch (const std::exception& e) {
            program_->fail(std::string("exception: ") + e.what());
            program_->finish();
            finished_.set();
        }
    }

    AccessorProgram* program_ = nullptr;
    Finished finished_;
};

// A thread that goes from one access to the next in one call where its script
// allows (release(next) with next its next request), else as BlockingDriver.
class FusedBlockingDriver final : public Driver {
public:
    ~FusedBlockingDriver() override { join(); }
    void start(AccessorProgram& program) override
    {
        thread_ = std::thread([&program] {
            try {
                Access kept;
                while (const auto t = program.next_request()) {
                    program.noise().pause_point();
                    Access a = kept ? program.accessor().release_and_request(std::move(kept), *t)
                                    : program.accessor().request_access(*t);
                    program.on_outcome(a.error(), std::move(a), &kept);
                }
            } catch (const std::exception& e) {
                program.fail(std::string("exception: ") + e.what());
            }
            program.finish();
        });
    }
    void join() override
    {
        if (thread_.joinable()) thread_.join();
    }

private:
    std::thread thread_;
};

// async_release_and_request with a callback on a strand of the shared io_context.
class FusedAsyncDriver final : public Driver {
public:
    explicit FusedAsyncDriver(boost::asio::io_context& io) : strand_(boost::asio::make_strand(io)) {}
    ~FusedAsyncDriver() override { join(); }
    void start(AccessorProgram& program) override
    {
        program_ = &program;
        boost::asio::post(strand_, [this] { next(Access{}); });
    }
    void join() override
    {
        if (program_ != nullptr) finished_.wait();
    }

private:
    void next(Access kept)
    {
        try {
            const auto t = program_->next_request();
            if (!t) {
                program_->finish();
                finished_.set();
                return;
            }
            program_->noise().pause_point();
            auto on_grant = boost::asio::bind_executor(strand_, [this](std::error_code e, Access a) {
                Access keep;
                program_->on_outcome(e, std::move(a), &keep);
                next(std::move(keep));
            });
            if (kept) {
                program_->accessor().async_release_and_request(std::move(kept), *t, std::move(on_grant));
            } else {
                program_->accessor().async_request_access(*t, std::move(on_grant));
            }
        } catch (const std::exception& e) {
            program_->fail(std::string("exception: ") + e.what());
            program_->finish();
            finished_.set();
        }
    }

    boost::asio::strand<boost::asio::io_context::executor_type> strand_;
    AccessorProgram* program_ = nullptr;
    Finished finished_;
};

// A persistent inline system (run_system): the engine releases and asks again
// with the time it returns; a call whose release the script makes differently
// releases itself and returns the next request, which the engine just asks for.
// A refusal is its last call: it starts again for the steps left.
class PersistentSystemDriver final : public Driver {
public:
    ~PersistentSystemDriver() override { join(); }
    void start(AccessorProgram& program) override
    {
        program_ = &program;
        begin();
    }
    void join() override
    {
        if (program_ != nullptr) finished_.wait();
    }

private:
    void begin()
    {
        try {
            const auto t = program_->next_request();
            if (!t) {
                end();
                return;
            }
            program_->accessor().run_system(*t, [this](Access& a) { return call(a); });
        } catch (const std::exception& e) {
            program_->fail(std::string("exception: ") + e.what());
            end();
        }
    }
    std::optional<SimTime> call(Access& a)
    {
        if (!a) { // the last call: refused (or cancelled: asked again by begin)
            program_->on_outcome(a.error(), std::move(a));
            begin();
            return std::nullopt;
        }
        Access keep;
        program_->on_outcome({}, std::move(a), &keep);
        a = std::move(keep); // empty unless kept for the engine's release and request
        const auto t = program_->next_request();
        if (!t) end();
        return t;
    }
    void end()
    {
        program_->finish();
        finished_.set();
    }

    AccessorProgram* program_ = nullptr;
    Finished finished_;
};

} // namespace

std::unique_ptr<Driver> make_driver(DriverKind kind, std::uint64_t seed, DriverContext& context)
{
    switch (kind) {
    case DriverKind::blocking: return std::make_unique<BlockingDriver>(BlockingDriver::Style::plain, seed);
    case DriverKind::blocking_timed: return std::make_unique<BlockingDriver>(BlockingDriver::Style::timed, seed);
    case DriverKind::blocking_try: return std::make_unique<BlockingDriver>(BlockingDriver::Style::try_first, seed);
    case DriverKind::async_callback: return std::make_unique<AsyncCallbackDriver>(*context.io, seed);
    case DriverKind::coroutine: return std::make_unique<CoroutineDriver>(*context.io);
    case DriverKind::inline_system: return std::make_unique<InlineSystemDriver>();
    case DriverKind::fused_blocking: return std::make_unique<FusedBlockingDriver>();
    case DriverKind::fused_async: return std::make_unique<FusedAsyncDriver>(*context.io);
    case DriverKind::persistent_system: return std::make_unique<PersistentSystemDriver>();
    }
    return nullptr;
}

// ------------------------------------------------------------------ the run

namespace {

// Pause, step, run_until and resume at random wall-clock moments, snapshots in
// between, and now and then a checkpoint whose outcome the model predicts.
class OperatorNoise {
public:
    OperatorNoise(const Scenario& s, SimSyncHandler& handler, std::uint64_t seed, const std::atomic<bool>& done)
        : s_(s), handler_(handler), rng_(seed), done_(done)
    {
    }
    void run()
    {
        int checkpoints_left = s_.op.checkpoints;
        while (!done_.load()) {
            const auto r = uniform(0, 99);
            if (checkpoints_left > 0 && r < 8) {
                checkpoint();
                --checkpoints_left;
            } else if (r < 25) {
                handler_.pause();
            } else if (r < 40) {
                handler_.step(uniform(1, 5));
            } else if (r < 55) {
                handler_.run_until(handler_.now() + s_.dt * uniform(0, 20));
            } else if (r < 62) {
                (void)handler_.snapshot();
            } else {
                handler_.resume();
            }
            std::this_thread::sleep_for(std::chrono::microseconds(uniform(0, static_cast<std::uint32_t>(s_.op.max_gap_us))));
        }
        handler_.resume();
    }
    std::vector<CheckpointRecord> checkpoints;
    std::vector<std::string> errors;

private:
    std::uint32_t uniform(std::uint32_t lo, std::uint32_t hi)
    {
        return std::uniform_int_distribution<std::uint32_t>(lo, hi)(rng_);
    }
    void checkpoint()
    {
        CheckpointRecord c;
        handler_.pause(); // time stands still from here: `before` is exact
        c.before = handler_.now();
        c.target = std::min(c.before + s_.dt * uniform(1, 12), s_.end);
        handler_.run_until(c.target);
        c.paused_in_time = handler_.wait_until_paused(WallClock::now() + std::chrono::seconds(20));
        c.snapshot = handler_.snapshot();
        checkpoints.push_back(std::move(c));
    }

    const Scenario& s_;
    SimSyncHandler& handler_;
    std::mt19937 rng_;
    const std::atomic<bool>& done_;
};

} // namespace

Observation run_on_engine(const Scenario& s, const RunOptions& options)
{
    Observation obs;
    ProbeWorld world(s.dt);
    // The handler's own stall reports: time standing still for seconds while
    // somebody waits never happens in a healthy run of these short scenarios.
    std::mutex diagnostics_mutex;
    std::vector<std::string> diagnostics;
    SimSyncHandler handler(world, {.step = s.dt, .rounding = s.rounding, .start_paused = s.start_paused,
                                   .step_thread = s.step_thread,
                                   .diagnostics = [&](const Diagnostic& d) {
                                       std::lock_guard<std::mutex> g(diagnostics_mutex);
                                       diagnostics.push_back(d.message);
                                   }});
    const bool with_operator = options.operator_noise && s.op.enabled;
    if (s.start_paused && !with_operator) handler.resume();

    std::vector<Accessor> accessors;
    accessors.reserve(s.accessors.size());
    for (const AccessorSpec& a : s.accessors) accessors.push_back(handler.register_accessor(a.name, a.options));
    // Holds time just after the end, below everybody at one instant: an
    // operator's step or run_until cannot run the world on once scripts are done.
    Accessor keeper = handler.register_accessor(
        "keeper", {.kind = AccessorKind::lockstep, .priority = std::numeric_limits<int>::min(), .first_request = s.end + s.dt});

    std::thread host;
    std::string host_error;
    if (s.step_thread == StepThread::host) {
        host = std::thread([&] {
            try {
                handler.run();
            } catch (const std::exception& e) {
                host_error = e.what();
            }
        });
    }

    // The asynchronous drivers' io_context, served by two threads until every
    // program has finished (declared before the drivers: it outlives them).
    boost::asio::io_context io;
    auto work = boost::asio::make_work_guard(io);
    std::vector<std::thread> pool;
    const bool any_async = std::any_of(s.accessors.begin(), s.accessors.end(), [](const AccessorSpec& a) {
        return a.driver == DriverKind::async_callback || a.driver == DriverKind::coroutine ||
               a.driver == DriverKind::fused_async;
    });
    if (any_async) {
        for (int k = 0; k < 2; ++k) pool.emplace_back([&io] { io.run(); });
    }
    DriverContext driver_context{&io};

    std::vector<std::unique_ptr<AccessorProgram>> programs;
    std::vector<std::unique_ptr<Driver>> drivers;
    for (std::size_t i = 0; i < s.accessors.size(); ++i) {
        const std::uint64_t seed = options.noise_seed * 0x9E3779B97F4A7C15ULL + i;
        // An inline system runs on the stepping thread: it yields, never sleeps.
        NoiseSpec noise = s.noise;
        if (s.accessors[i].driver == DriverKind::inline_system ||
            s.accessors[i].driver == DriverKind::persistent_system) {
            noise.sleep_percent = 0;
        }
        programs.push_back(std::make_unique<AccessorProgram>(s, i, handler, accessors[i], world, seed, noise));
        drivers.push_back(make_driver(s.accessors[i].driver, seed ^ 0x5bd1e995, driver_context));
    }
    std::atomic<bool> done{false};
    OperatorNoise op(s, handler, options.noise_seed ^ 0xA5A5A5A5ULL, done);
    std::thread op_thread;
    if (with_operator) op_thread = std::thread([&] { op.run(); });
    std::mutex finished_mutex;
    std::condition_variable finished_cv;
    std::size_t finished = 0;
    for (auto& p : programs) {
        p->on_finish = [&] {
            std::lock_guard<std::mutex> g(finished_mutex);
            ++finished;
            finished_cv.notify_all();
        };
    }
    for (std::size_t i = 0; i < drivers.size(); ++i) drivers[i]->start(*programs[i]);
    {
        std::unique_lock<std::mutex> lock(finished_mutex);
        if (!finished_cv.wait_for(lock, options.stall_after, [&] { return finished == drivers.size(); })) {
            lock.unlock();
            const Snapshot snap = handler.snapshot();
            std::ostringstream what;
            what << "stalled: no end after " << options.stall_after.count() << " s; now " << show(snap.now) << ", "
                 << to_string(snap.state) << ", waiting for:";
            for (const auto& w : snap.waiting_for) what << ' ' << w;
            for (const auto& a : snap.accessors) {
                what << "; " << a.name << ' ' << to_string(a.activity) << ' ' << show(a.time);
            }
            obs.errors.push_back(what.str());
            handler.stop(); // every waiter returns `stopped`: the drivers end
        }
    }
    for (auto& d : drivers) d->join();
    work.reset();
    for (auto& t : pool) t.join();
    done = true;
    if (op_thread.joinable()) op_thread.join();

    handler.pause(); // returns once time stands still: the figures below agree
    obs.final_now = handler.now();
    obs.handler_steps = handler.steps();
    obs.world_steps = world.steps();
    keeper.deregister();
    handler.stop();
    if (host.joinable()) host.join();
    if (!host_error.empty()) obs.errors.push_back("host run(): " + host_error);
    {
        std::lock_guard<std::mutex> g(diagnostics_mutex);
        for (const std::string& d : diagnostics) obs.errors.push_back("handler diagnostic: " + d);
    }

    for (auto& p : programs) {
        obs.records.push_back(p->take_records());
        for (auto& e : p->take_errors()) obs.errors.push_back(std::move(e));
    }
    obs.checkpoints = std::move(op.checkpoints);
    obs.det_hash = world.det_hash;
    obs.probe_violations = world.probe_violations.load();
    obs.step_violations = world.step_violations.load();
    return obs;
}

} // namespace simsync::model
