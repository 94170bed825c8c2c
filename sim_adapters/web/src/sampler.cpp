// The sampler thread: reads the handler, the scene and the timeline at the
// frame rate (sooner after a HandlerEvent) and hands each frame to the network.

#include "console_impl.hpp"

namespace simsync::web {

void WebConsole::Impl::frame_soon()
{
    {
        std::lock_guard<std::mutex> g(stop_mutex);
        changed = true;
    }
    stop_cv.notify_all();
}

void WebConsole::Impl::sampler_loop()
{
    // An event brings the next frame forward, but frames stay at least a quarter
    // period (at most 50 ms) apart: a burst of single steps must not turn the
    // sampler into a busy loop.
    const auto min_gap = std::min<WallClock::duration>(config.frame_period / 4, std::chrono::milliseconds(50));
    try {
        auto next = WallClock::now();
        auto last = next - config.frame_period;
        for (;;) {
            {
                std::unique_lock<std::mutex> lock(stop_mutex);
                for (;;) {
                    if (stopping) return;
                    const auto now = WallClock::now();
                    if (now >= next || (changed && now >= last + min_gap)) break;
                    stop_cv.wait_until(lock, changed ? std::min(next, last + min_gap) : next);
                }
                changed = false;
            }
            last = WallClock::now();
            tick();
            // Timed from this frame's start; a frame that took longer than a
            // period (a long scene read) is followed at once, never by a burst.
            next = last + config.frame_period;
        }
    } catch (...) {
        std::lock_guard<std::mutex> g(failure_mutex);
        failure = std::current_exception();
    }
}

bool WebConsole::Impl::read_scene()
{
    // Try first without waiting; then wait a little for a holder of an
    // exclusive access at this instant; a time that passed meanwhile is retried
    // at the new instant. Never longer than a quarter of a frame period.
    const auto patience = std::min<WallClock::duration>(config.frame_period / 4, std::chrono::milliseconds(10));
    Access access;
    for (int attempt = 0; attempt < 3 && !access; ++attempt) {
        const SimTime t = handler.now();
        access = accessor->try_request_access(t);
        if (!access && access.error() == errc::would_block) access = accessor->request_access_for(t, patience);
        if (!access && access.error() != errc::time_passed) break;
    }
    if (!access) return false;
    scene_frame.shapes.clear();
    scene_error.clear();
    try {
        sources.scene->draw(access.world(), scene_frame);
    } catch (const std::exception& e) {
        scene_error = e.what();
        scene_frame.shapes.clear();
    }
    scene_time = access.granted_time();
    access.release();
    return true;
}

void WebConsole::Impl::tick()
{
    const Snapshot snap = handler.snapshot();
    const WallTime wall = WallClock::now();

    // Grants per second and simulated seconds per wall second over the last second.
    rate_points.push_back({wall, snap.now, snap.grants});
    while (rate_points.size() > 2 && wall - rate_points[1].wall >= std::chrono::seconds(1)) rate_points.pop_front();
    double measured = 0;
    double grant_rate = 0;
    if (rate_points.size() >= 2) {
        const double dt = seconds(rate_points.back().wall - rate_points.front().wall);
        if (dt > 0) {
            measured = seconds(rate_points.back().sim) / dt - seconds(rate_points.front().sim) / dt;
            grant_rate = static_cast<double>(rate_points.back().grants - rate_points.front().grants) / dt;
        }
    }
    std::optional<double> achieved;
    std::optional<double> target;
    if (sources.pacer != nullptr) {
        const PacerStats stats = sources.pacer->stats();
        achieved = stats.achieved_factor;
        target = sources.scale != nullptr ? sources.scale->value() : stats.target_factor;
        if (!sources.pacer->running()) target.reset(); // stopped pacing: unpaced from now on
    } else {
        achieved = measured;
    }
    history.push_back({wall, achieved, target});
    while (!history.empty() && wall - history.front().wall > config.history_window) history.pop_front();

    if (accessor) {
        if (read_scene()) {
            ++scene_reads;
        } else {
            ++scene_misses;
        }
    }

    std::vector<GrantTimeline::TrackSpans> fresh;
    if (sources.timeline != nullptr) {
        fresh = sources.timeline->read(timeline_cursor);
        if (recent.size() < fresh.size()) recent.resize(fresh.size());
        for (const auto& t : fresh) {
            RecentTrack& r = recent[t.track];
            r.name = t.name;
            r.category = t.category;
            for (const GrantSpan& s : t.spans) r.spans.push_back(s);
            while (!r.spans.empty() && (r.spans.size() > kMaxSpansPerTrack ||
                                        wall - r.spans.front().released > config.timeline_window)) {
                r.spans.pop_front();
            }
        }
    }

    auto frame = std::make_shared<const std::string>(
        build_frame(snap, wall, achieved, target, measured, grant_rate, fresh));
    Message history_message;
    if (history_wanted.exchange(false)) history_message = std::make_shared<const std::string>(build_history(wall));
    ++frames;
    asio::post(*ioc, [this, history_message, frame] { broadcast(history_message, frame); });
}

} // namespace simsync::web
