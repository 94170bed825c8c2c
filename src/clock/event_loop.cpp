#include <simsync/clock/event_loop.hpp>
#include <simsync/core/asio.hpp>
#include <simsync/core/error.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <exception>
#include <future>
#include <utility>
#include <optional>
#include <mutex>
#include <thread>
#include <vector>

namespace simsync {
namespace detail {

struct TimerState {
    std::mutex mutex;
    std::uint64_t generation = 0; // bumped by every arm and cancel
    bool armed = false;
    WallTime deadline{};
    std::function<void()> callback;
    // Real clock only; its operations are made under `mutex` (Asio: one timer
    // object is not safe from two threads at once).
    std::optional<boost::asio::steady_timer> timer;

    // Takes the callback if the wait `generation` is still the pending one.
    std::function<void()> take(std::uint64_t expected)
    {
        std::lock_guard<std::mutex> guard(mutex);
        if (!armed || generation != expected) return {};
        armed = false;
        return std::move(callback);
    }
};

struct LoopImpl {
    LoopImpl(WallClockSource& c, bool jump) : clock(c), manual(dynamic_cast<ManualWallClock*>(&c)), jumps(jump) {}

    WallClockSource& clock;
    ManualWallClock* manual;
    const bool jumps; // EventLoop::ManualTime::jumps_to_deadlines
    boost::asio::io_context io;
    std::atomic<std::thread::id> thread_id{};
    std::thread thread;
    std::uint64_t listener = 0; // ManualWallClock::add_listener id

    // ManualWallClock: the timers to check when the clock moves.
    std::mutex timers_mutex;
    std::vector<std::weak_ptr<TimerState>> manual_timers;

    // Runs, on the loop's thread, every manual timer whose deadline has come.
    void fire_due_manual_timers()
    {
        const WallTime now = clock.steady_now();
        std::vector<std::function<void()>> due;
        {
            std::lock_guard<std::mutex> guard(timers_mutex);
            std::erase_if(manual_timers, [](const auto& weak) { return weak.expired(); });
            for (const auto& weak : manual_timers) {
                auto state = weak.lock();
                if (!state) continue;
                std::lock_guard<std::mutex> state_guard(state->mutex);
                if (state->armed && state->deadline <= now) {
                    state->armed = false;
                    due.push_back(std::move(state->callback));
                }
            }
        }
        // Earliest deadline first would need the deadlines; the order among
        // timers due at one clock move is that of their creation.
        for (auto& callback : due) callback();
    }
};

struct LoopAccess {
    static std::shared_ptr<LoopImpl> lock(const Executor& executor, const char* what)
    {
        auto loop = executor.loop_.lock();
        if (!loop) throw Error(errc::invalid_state, std::string(what) + ": the event loop is gone (or the executor is empty)");
        return loop;
    }
};

boost::asio::io_context& io_context_of(const Executor& executor)
{
    return LoopAccess::lock(executor, "simsync::asio_executor")->io;
}

} // namespace detail

void Executor::post(std::function<void()> job) const
{
    auto loop = detail::LoopAccess::lock(*this, "Executor::post");
    boost::asio::post(loop->io, std::move(job));
}

void Executor::sync(const std::function<void()>& job) const
{
    auto loop = loop_.lock();
    if (!loop || loop->thread_id.load(std::memory_order_acquire) == std::this_thread::get_id()) {
        job();
        return;
    }
    // The state's last word comes from the job's destructor: run or dropped
    // (a loop destroyed before running it drops it), the waiter learns which.
    // The error is moved out by the waiter under the mutex, so the loop thread
    // never drops the last reference to an exception the caller has caught
    // (exception_ptr's count is invisible to ThreadSanitizer).
    struct State {
        std::mutex mutex;
        std::condition_variable cv;
        bool ran = false;
        bool finished = false;
        std::exception_ptr error;
    };
    struct Finish {
        std::shared_ptr<State> state;
        explicit Finish(std::shared_ptr<State> s) : state(std::move(s)) {}
        Finish(Finish&& other) noexcept = default;
        Finish& operator=(Finish&&) = delete;
        ~Finish()
        {
            if (!state) return;
            std::lock_guard<std::mutex> guard(state->mutex);
            state->finished = true;
            state->cv.notify_all();
        }
    };
    auto state = std::make_shared<State>();
    boost::asio::post(loop->io, [&job, finish = Finish(state)] {
        std::exception_ptr error;
        try {
            job();
        } catch (...) {
            error = std::current_exception();
        }
        std::lock_guard<std::mutex> guard(finish.state->mutex);
        finish.state->ran = true;
        finish.state->error = std::move(error);
    });
    loop.reset(); // the loop's destruction must not wait for us
    std::exception_ptr error;
    {
        std::unique_lock<std::mutex> lock(state->mutex);
        state->cv.wait(lock, [&] { return state->finished; });
        if (!state->ran) {
            lock.unlock();
            job(); // dropped: nothing runs on the loop any more
            return;
        }
        error = std::exchange(state->error, nullptr);
    }
    if (error) std::rethrow_exception(error);
}

bool Executor::running_in_this_thread() const noexcept
{
    auto loop = loop_.lock();
    return loop && loop->thread_id.load(std::memory_order_acquire) == std::this_thread::get_id();
}

WallClockSource& Executor::clock() const { return detail::LoopAccess::lock(*this, "Executor::clock")->clock; }

WallTimer::WallTimer(const Executor& executor) : state_(std::make_shared<detail::TimerState>())
{
    auto loop = detail::LoopAccess::lock(executor, "WallTimer");
    if (loop->manual) {
        std::lock_guard<std::mutex> guard(loop->timers_mutex);
        loop->manual_timers.push_back(state_);
        // The timer keeps a way back to its loop for wait_until.
    } else {
        state_->timer.emplace(loop->io);
    }
    loop_ = executor;
}

WallTimer::~WallTimer() { cancel(); }

void WallTimer::wait_until(WallTime deadline, std::function<void()> callback)
{
    auto loop = detail::LoopAccess::lock(loop_, "WallTimer::wait_until");
    std::lock_guard<std::mutex> guard(state_->mutex);
    const std::uint64_t generation = ++state_->generation;
    state_->armed = true;
    state_->deadline = deadline;
    state_->callback = std::move(callback);
    if (state_->timer) {
        state_->timer->expires_at(deadline);
        state_->timer->async_wait(
            [weak = std::weak_ptr<detail::TimerState>(state_), generation](const boost::system::error_code&) {
                // Also on operation_aborted: the generation says whether this
                // wait is still the pending one (a re-arm aborts the old wait).
                if (auto state = weak.lock()) {
                    if (auto due = state->take(generation)) due();
                }
            });
    } else if (loop->jumps && deadline > loop->clock.steady_now()) {
        // A sleep that takes no time: the clock moves to the deadline once the
        // jobs before this one ran, if this wait is still the pending one; its
        // listener then fires the timer.
        boost::asio::post(loop->io, [weak = std::weak_ptr<detail::TimerState>(state_), generation, manual = loop->manual] {
            auto state = weak.lock();
            if (!state) return;
            WallTime until{};
            {
                std::lock_guard<std::mutex> state_guard(state->mutex);
                if (!state->armed || state->generation != generation) return;
                until = state->deadline;
            }
            manual->sleep_until(until);
        });
    } else if (deadline <= loop->clock.steady_now()) {
        boost::asio::post(loop->io, [weak = std::weak_ptr<detail::TimerState>(state_), generation] {
            if (auto state = weak.lock()) {
                if (auto due = state->take(generation)) due();
            }
        });
    }
}

void WallTimer::cancel() noexcept
{
    std::function<void()> dropped;
    {
        std::lock_guard<std::mutex> guard(state_->mutex);
        ++state_->generation;
        state_->armed = false;
        dropped = std::move(state_->callback);
        if (state_->timer) state_->timer->cancel();
    }
    // `dropped` is destroyed outside the lock: what it captures may be anything.
}

bool WallTimer::armed() const noexcept
{
    std::lock_guard<std::mutex> guard(state_->mutex);
    return state_->armed;
}

EventLoop::EventLoop(WallClockSource& clock, ManualTime manual_time)
    : impl_(std::make_shared<detail::LoopImpl>(clock, manual_time == ManualTime::jumps_to_deadlines))
{
    detail::LoopImpl& loop = *impl_;
    if (loop.manual) {
        loop.listener = loop.manual->add_listener([weak = std::weak_ptr<detail::LoopImpl>(impl_)] {
            if (auto alive = weak.lock()) {
                boost::asio::post(alive->io, [weak] {
                    if (auto still = weak.lock()) still->fire_due_manual_timers();
                });
            }
        });
    }
    std::promise<void> started;
    auto running = started.get_future();
    // The thread owns the loop's state as long as it runs: see the destructor.
    loop.thread = std::thread([impl = impl_, &started] {
        impl->thread_id.store(std::this_thread::get_id(), std::memory_order_release);
        auto work = boost::asio::make_work_guard(impl->io);
        started.set_value();
        impl->io.run();
    });
    pthread_setname_np(loop.thread.native_handle(), "simsync-loop");
    running.wait(); // running_in_this_thread() is right from the start
}

EventLoop::~EventLoop()
{
    detail::LoopImpl& loop = *impl_;
    // Nothing of the caller's (its clock) is touched once this returns.
    if (loop.manual) loop.manual->remove_listener(loop.listener);
    loop.io.stop();
    if (loop.thread.get_id() == std::this_thread::get_id()) {
        // Destroyed by one of its own jobs: the thread cannot join itself. It
        // ends when that job returns, and keeps the loop's state alive until
        // then (the jobs not yet run are dropped on it).
        loop.thread.detach();
        return;
    }
    if (loop.thread.joinable()) loop.thread.join();
    loop.thread_id.store(std::thread::id{}, std::memory_order_release);
}

Executor EventLoop::executor() const noexcept { return Executor(impl_); }

WallClockSource& EventLoop::clock() const noexcept { return impl_->clock; }

} // namespace simsync
