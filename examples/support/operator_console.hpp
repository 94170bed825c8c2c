#pragma once
// What the example programs (simsync-demo, simsync-bullet-host) share for the
// operator: the one-line status, the real-time factor it shows, and the console
// thread that reads commands from stdin. Example code, not library API.

#include <cstdint>
#include <simsync/accessors/pacer.hpp>
#include <simsync/clock/time_scale.hpp>
#include <simsync/clock/wall_clock.hpp>
#include <simsync/core/error.hpp>
#include <simsync/core/handler.hpp>
#include <simsync/core/time.hpp>

#include <atomic>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace simsync::examples {

// Simulated time over wall time in the last second, sampled by the console ten
// times a second (the status line's rtf). Any thread may call both members.
// Copy/move: neither (it holds a mutex).
class RateMeter {
public:
    RateMeter() = default;
    RateMeter(const RateMeter&) = delete;
    RateMeter& operator=(const RateMeter&) = delete;
    void sample(SimTime sim, std::uint64_t grants);
    // Simulated seconds per wall second over the last second; 0 until two samples exist.
    double factor() const;
    // Grants per wall second over the last second; 0 until two samples exist.
    double grant_rate() const;

private:
    struct Sample {
        WallClock::time_point wall;
        SimTime sim;
        std::uint64_t grants;
    };
    mutable std::mutex m_;
    std::deque<Sample> samples_;
};

// "status sim_time=<seconds> state=<running|paused|stopped> rtf=<x> grants=<n>";
// `verbose` (the terminal's live line; `status` is not) adds grants/s and, when
// time is stalled, who it waits for (stalled_text).
std::string status_line(const SimSyncHandler& handler, const RateMeter& meter, bool verbose);

// How long time must have waited for the same accessors before the status line
// names them: a pacer holds time for up to a period at every pacing point, a
// sensor for the length of its access; that is the run's rhythm, not a stall.
inline constexpr WallClock::duration kStalledAfter = std::chrono::seconds(1);
// " waiting_for=<names> (<seconds> s)" if `snapshot` says time has waited for
// the same accessors for kStalledAfter or longer, else "".
std::string stalled_text(const Snapshot& snapshot);

// The bytes that redraw a terminal's status line in place: carriage return,
// the line (cut to `columns` - 1 characters when the width is known, > 0, so it
// never wraps onto a second row that a carriage return cannot reach), then
// "erase to end of line" (ESC [ K), so a shorter line leaves nothing of a
// longer one behind.
std::string redraw_status(const std::string& line, int columns);

// "pacer: N grants (... on time, ... late, ... unpaced), ... re-anchors; lateness
// p50 ..., p99 ..., max ...; target factor x[, achieved y over the last window]".
std::string pacer_summary(const PacerStats& stats);

// Prints "web console: URL" on a line of its own (flushed, so a script reading
// the program's output sees it at once), and under it what the operator must
// know: that control needs the token in the URL, and that a wildcard address
// (0.0.0.0, ::) stands for this machine's own.
void print_web_console_url(const std::string& url, bool needs_token, const std::string& host);

// What the console tells an operator without a terminal about a paused run,
// on stderr: with `start_paused` (the scenario's handler.start_paused), at once,
// that time waits for `resume` and how to give it; and if stdin ends while the
// run is paused, that only the web console (`web_console`: the program serves
// one) can resume it now, or else nothing, and that a signal ends it.
struct PausedRunHints {
    std::string program; // "simsync-demo"; empty: no hints
    bool start_paused = false;
    bool web_console = false;
};

// The operator's console: a thread that reads stdin and drives the handler.
//   On a terminal (single keys): p pause, r resume, s step, + / - scale x2 / /2,
//   q quit; the status line is redrawn in place four times a second.
//   Otherwise one command per line, as parse_operator_command reads them (pause,
//   resume, step N, until T, scale X, revoke NAME, status, quit: the web
//   console's vocabulary too); `status` prints status_line, a bad command prints
//   "error ..." and changes nothing.
// `quit` calls `on_quit` on the console thread. The end of input (stdin is
// /dev/null, an empty pipe, a closed one: nohup, systemd, docker without -t, a
// launch file) means "no more commands", never "quit": the run goes on until
// its own end, `quit` from another console, or a signal (StopOnSignals), and
// the console keeps sampling the rate until stop(). Without a terminal it gives
// the `hints` (PausedRunHints).
//
// Copy/move: neither. Threads: construct and destroy on one thread; stop() from
// any thread but the console's own, one at a time; `meter()` from any.
// `on_quit` must not call stop().
// Guarantees: the destructor stops and joins the thread within about 50 ms; the
// terminal is restored to its previous mode.
class OperatorConsole {
public:
    OperatorConsole(SimSyncHandler& handler, TimeScale& scale, std::function<void()> on_quit,
                    PausedRunHints hints = {});
    ~OperatorConsole();
    OperatorConsole(const OperatorConsole&) = delete;
    OperatorConsole& operator=(const OperatorConsole&) = delete;

    // Ends and joins the console thread (idempotent).
    void stop();
    // True if stdin is a terminal (single-key mode); the program then ends its
    // output with a newline after the in-place status line.
    bool terminal() const noexcept { return tty_; }
    const RateMeter& meter() const noexcept { return meter_; }

private:
    void run();
    void command(const std::string& line);
    void key(char c);

    SimSyncHandler& handler_;
    TimeScale& scale_;
    std::function<void()> on_quit_;
    PausedRunHints hints_;
    bool tty_;
    RateMeter meter_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

} // namespace simsync::examples
