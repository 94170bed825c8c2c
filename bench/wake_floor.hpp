#pragma once
// The physical floor of "one thread per participant" on this machine, measured in
// the same run as the styles it bounds (issue 25: "what the physical floor of this
// machine is"). Used by bench_mujoco_host and bench_bullet_host.
//
// A participant's thread that waits across several physics steps sleeps: no
// sensible spin lasts milliseconds. Whatever the synchronisation, each of its
// instants then puts at least one wake-up of a sleeping thread on the critical
// path: the world cannot step on while it is read, and the reader cannot read
// before it runs. SleepingReader is that and nothing more: the stepping thread
// posts an item (a counter bumped, then FUTEX_WAKE); the reader, asleep in
// FUTEX_WAIT, runs its read, bumps its reply counter and wakes; the stepping thread
// spins for the reply for up to kSpin and only then sleeps in FUTEX_WAIT. kSpin
// (200 us) is longer than waking a thread on a halted vCPU of this VM (tens of
// microseconds) plus a read, so the reply is caught without a second sleep: one
// wake-up per item, the least there can be (the handler's Waiter spins briefly,
// then sleeps, and its waker must wake it).
// Raw futexes, not std::atomic::wait: libstdc++'s wait yields (sched_yield) before
// it sleeps, so a waiting reader kept its vCPU busy and took CPU from the other
// processes of this shared machine (the first version of this file measured a
// "floor" below the plain loop that way). No mutex, no queue, no handler.
//
// Copy/move: neither. Thread safety: post()/wait_replied() from one thread (the
// stepping thread); the destructor from that thread too, after the last reply.

#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <thread>
#include <utility>

namespace simsync::bench {

class SleepingReader {
public:
    /// `name` names the reader's thread (perf, /proc; at most 15 characters).
    explicit SleepingReader(std::function<void()> read, const char* name = "reader")
        : read_(std::move(read)), thread_([this, name] {
              pthread_setname_np(pthread_self(), name);
              loop();
          })
    {
    }
    SleepingReader(const SleepingReader&) = delete;
    SleepingReader& operator=(const SleepingReader&) = delete;
    ~SleepingReader()
    {
        stop_.store(true, std::memory_order_relaxed);
        post();
        thread_.join();
    }

    /// Wakes the reader for one read (returns at once).
    void post()
    {
        posted_.fetch_add(1, std::memory_order_release);
        wake(posted_);
    }
    /// Waits until the reader has finished every read posted so far.
    void wait_replied()
    {
        const std::uint32_t want = posted_.load(std::memory_order_relaxed);
        const auto spin_until = std::chrono::steady_clock::now() + kSpin;
        for (std::uint32_t seen; (seen = replied_.load(std::memory_order_acquire)) != want;) {
            if (std::chrono::steady_clock::now() < spin_until) {
                __builtin_ia32_pause();
                continue;
            }
            sleep_while(replied_, seen); // returns at once if the reply came since `seen`
        }
    }

private:
    void loop()
    {
        std::uint32_t done = 0;
        for (;;) {
            std::uint32_t now = posted_.load(std::memory_order_acquire);
            while (now == done) {
                sleep_while(posted_, done);
                now = posted_.load(std::memory_order_acquire);
            }
            if (stop_.load(std::memory_order_relaxed)) return;
            for (; done != now; ++done) read_();
            replied_.store(done, std::memory_order_release);
            wake(replied_);
        }
    }

    static constexpr std::chrono::microseconds kSpin{200};
    static void wake(std::atomic<std::uint32_t>& word)
    {
        syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
    }
    // Sleeps while `word` still holds `seen` (a spurious return just loops in the caller).
    static void sleep_while(std::atomic<std::uint32_t>& word, std::uint32_t seen)
    {
        syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE, seen, nullptr, nullptr, 0);
    }

    std::function<void()> read_;
    std::atomic<std::uint32_t> posted_{0};
    std::atomic<std::uint32_t> replied_{0};
    std::atomic<bool> stop_{false};
    std::thread thread_; // last: started once the rest is made
    static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t) && std::atomic<std::uint32_t>::is_always_lock_free);
};

} // namespace simsync::bench
