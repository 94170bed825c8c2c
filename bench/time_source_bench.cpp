// Time-source reads per second from several threads: simsync's lock-free
// sources against a mutex-guarded source built the way AWSIM's TimeSource is
// (lock, read the wall clock, read the scale, accumulate the scaled delta since
// the previous call, unlock). Both run in the same process, one after the other,
// so the ratio is meaningful even on a noisy shared machine.

#include <simsync/simsync.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;

class MutexGuardedSource final : public simsync::TimeSource {
public:
    explicit MutexGuardedSource(const simsync::TimeScale& scale)
        : scale_(scale), previous_(simsync::WallClock::now())
    {
    }

protected:
    simsync::SourceTime read() const noexcept override
    {
        std::lock_guard<std::mutex> guard(mutex_);
        const auto now = simsync::WallClock::now();
        const double scale = scale_.value();
        const auto delta = std::chrono::duration_cast<std::chrono::nanoseconds>(now - previous_).count();
        elapsed_ns_ += std::llround(static_cast<double>(delta) * scale);
        previous_ = now;
        return simsync::SourceTime{simsync::SourceTime::duration{elapsed_ns_}};
    }

private:
    const simsync::TimeScale& scale_;
    mutable std::mutex mutex_;
    mutable simsync::WallTime previous_;
    mutable std::int64_t elapsed_ns_ = 0;
};

struct Result {
    double reads_per_second;
    double ns_per_read; // wall time per read per thread
};

template <class Read>
Result measure(const Read& read, int threads, std::chrono::milliseconds duration)
{
    std::atomic<bool> go{false};
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> total{0};
    std::atomic<std::int64_t> sink{0}; // keeps reads from being optimised away
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&] {
            while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
            std::uint64_t n = 0;
            std::int64_t last = 0;
            while (!stop.load(std::memory_order_relaxed)) {
                for (int i = 0; i < 64; ++i) last = read();
                n += 64;
            }
            total.fetch_add(n);
            sink.fetch_add(last);
        });
    }
    const auto start = std::chrono::steady_clock::now();
    go.store(true, std::memory_order_release);
    std::this_thread::sleep_for(duration); // a benchmark's measuring window, not a race fix
    stop.store(true);
    for (auto& t : pool) t.join();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double rate = static_cast<double>(total.load()) / seconds;
    return {rate, 1e9 * threads / rate};
}

} // namespace

int main(int argc, char** argv)
{
    const auto duration = std::chrono::milliseconds(argc > 1 ? std::atoi(argv[1]) : 1000);
    simsync::TimeScale scale(0.5);
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});

    simsync::ScaledWallTimeSource lock_free(scale, simsync::ScaledWallTimeSource::Origin::zero);
    simsync::SimTimeSource sim(handler);
    simsync::RosTimeSource ros;
    MutexGuardedSource guarded(scale);

    struct Row {
        const char* name;
        const simsync::TimeSource* source; // null: the unclamped TimeScale reading
    };
    const Row rows[] = {{"simulation (lock-free, scaled)", &lock_free},
                        {"mutex-guarded (AWSIM design)", &guarded},
                        {"sim (handler.now)", &sim},
                        {"ros (system clock)", &ros},
                        {"TimeScale::scaled_elapsed, no monotonic clamp", nullptr}};

    std::printf("time-source reads, %lld ms per row, %u hardware threads\n\n",
                static_cast<long long>(duration.count()), std::thread::hardware_concurrency());
    std::printf("| source | threads | reads/s (total) | ns per read per thread |\n|---|---|---|---|\n");
    double lock_free_2 = 0;
    double guarded_2 = 0;
    for (int threads : {1, 2}) {
        for (const Row& row : rows) {
            const Result r =
                row.source != nullptr
                    ? measure([&] { return row.source->now().time_since_epoch().count(); }, threads, duration)
                    : measure([&] { return scale.scaled_elapsed().count(); }, threads, duration);
            std::printf("| %s | %d | %.3g | %.1f |\n", row.name, threads, r.reads_per_second, r.ns_per_read);
            if (threads == 2 && row.source == &lock_free) lock_free_2 = r.reads_per_second;
            if (threads == 2 && row.source == &guarded) guarded_2 = r.reads_per_second;
        }
    }
    std::printf("\n2 threads: lock-free scaled source / mutex-guarded source = %.2fx\n", lock_free_2 / guarded_2);
    return 0;
}
