#include "operator_console.hpp"

#include <simsync/operator/operator_commands.hpp>

#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>

namespace simsync::examples {

void RateMeter::sample(SimTime sim, std::uint64_t grants)
{
    std::lock_guard<std::mutex> g(m_);
    samples_.push_back({WallClock::now(), sim, grants});
    while (samples_.size() > 11) samples_.pop_front(); // one second at 10 samples/s
}

double RateMeter::factor() const
{
    std::lock_guard<std::mutex> g(m_);
    if (samples_.size() < 2) return 0.0;
    const double wall = std::chrono::duration<double>(samples_.back().wall - samples_.front().wall).count();
    const double sim = std::chrono::duration<double>(samples_.back().sim - samples_.front().sim).count();
    return wall > 0 ? sim / wall : 0.0;
}

double RateMeter::grant_rate() const
{
    std::lock_guard<std::mutex> g(m_);
    if (samples_.size() < 2) return 0.0;
    const double wall = std::chrono::duration<double>(samples_.back().wall - samples_.front().wall).count();
    const auto grants = static_cast<double>(samples_.back().grants - samples_.front().grants);
    return wall > 0 ? grants / wall : 0.0;
}

std::string status_line(const SimSyncHandler& handler, const RateMeter& meter, bool verbose)
{
    const Snapshot snap = handler.snapshot();
    char buf[160];
    std::snprintf(buf, sizeof buf, "status sim_time=%s state=%s rtf=%.2f grants=%llu",
                  format_seconds(snap.now).c_str(), to_string(snap.state),
                  snap.state == HandlerState::running ? meter.factor() : 0.0,
                  static_cast<unsigned long long>(snap.grants));
    std::string line = buf;
    if (verbose) {
        std::snprintf(buf, sizeof buf, " grants/s=%.0f", meter.grant_rate());
        line += buf;
    }
    if (verbose) line += stalled_text(snap);
    return line;
}

std::string stalled_text(const Snapshot& snap)
{
    if (snap.waiting_for.empty() || snap.waiting_for_how_long < kStalledAfter) return {};
    std::string text = " waiting_for=";
    for (std::size_t i = 0; i < snap.waiting_for.size(); ++i) text += (i ? "," : "") + snap.waiting_for[i];
    char buf[48];
    std::snprintf(buf, sizeof buf, " (%.1f s)", std::chrono::duration<double>(snap.waiting_for_how_long).count());
    return text + buf;
}

std::string redraw_status(const std::string& line, int columns)
{
    std::string out = "\r";
    if (columns > 1 && line.size() >= static_cast<std::size_t>(columns)) {
        out += line.substr(0, static_cast<std::size_t>(columns - 1));
    } else {
        out += line;
    }
    return out + "\x1b[K";
}

std::string pacer_summary(const PacerStats& s)
{
    auto us = [](WallClock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); };
    char buf[400];
    std::snprintf(buf, sizeof buf,
                  "pacer: %llu grants (%llu on time, %llu late, %llu unpaced), %llu re-anchors; lateness p50 %.1f us, "
                  "p99 %.1f us, max %.1f us; target factor %.3f",
                  static_cast<unsigned long long>(s.grants), static_cast<unsigned long long>(s.on_time),
                  static_cast<unsigned long long>(s.late), static_cast<unsigned long long>(s.unpaced),
                  static_cast<unsigned long long>(s.reanchors), us(s.lateness.p50), us(s.lateness.p99),
                  us(s.lateness.max), s.target_factor);
    std::string line = buf;
    if (s.achieved_factor) {
        std::snprintf(buf, sizeof buf, ", achieved %.3f over the last window", *s.achieved_factor);
        line += buf;
    }
    return line;
}

void print_web_console_url(const std::string& url, bool needs_token, const std::string& host)
{
    std::printf("web console: %s\n", url.c_str());
    if (needs_token) {
        std::printf("web console: control needs the token after '#token=' (the browser never sends that part; the "
                    "page keeps it for its tab only); without it a page only watches\n");
    }
    if (host == "0.0.0.0" || host == "::") {
        std::printf("web console: listening on every interface: put this machine's address in the URL, or a name "
                    "given with --web-allow-host\n");
    }
    std::fflush(stdout);
}

namespace {

void print_paused_hint(const std::string& program, bool web_console, bool input_ended)
{
    if (!input_ended) {
        std::fprintf(stderr,
                     "%s: paused at the start (handler.start_paused: true): time waits for 'resume'; type it on "
                     "standard input, one command per line (resume, step N, until T, ...)%s\n",
                     program.c_str(), web_console ? ", or press resume on the web console" : "");
    } else if (web_console) {
        std::fprintf(stderr,
                     "%s: standard input has ended while the run is paused: resume it from the web console; "
                     "SIGINT or SIGTERM ends it\n",
                     program.c_str());
    } else {
        std::fprintf(stderr,
                     "%s: standard input has ended while the run is paused, so nothing can resume it: SIGINT or "
                     "SIGTERM ends it (give commands on standard input, or serve the web console with --web)\n",
                     program.c_str());
    }
}

// Puts a terminal into single-key mode for the life of the object.
class RawTerminal {
public:
    RawTerminal()
    {
        if (tcgetattr(STDIN_FILENO, &saved_) != 0) return;
        termios raw = saved_;
        raw.c_lflag &= static_cast<tcflag_t>(~(ICANON | ECHO));
        raw.c_cc[VMIN] = 0;
        raw.c_cc[VTIME] = 0;
        active_ = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
    }
    ~RawTerminal()
    {
        if (active_) tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
    }
    RawTerminal(const RawTerminal&) = delete;
    RawTerminal& operator=(const RawTerminal&) = delete;

private:
    termios saved_{};
    bool active_ = false;
};

// Waits up to `timeout` for input on stdin; returns the bytes read (empty on a
// timeout), or nullopt at end of input. The timeout bounds how long stop() waits.
std::optional<std::string> read_some(std::chrono::milliseconds timeout)
{
    pollfd fd{STDIN_FILENO, POLLIN, 0};
    const int ready = poll(&fd, 1, static_cast<int>(timeout.count()));
    if (ready <= 0) return std::string();
    char buf[256];
    const ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
    if (n <= 0) return std::nullopt;
    return std::string(buf, static_cast<std::size_t>(n));
}

} // namespace

OperatorConsole::OperatorConsole(SimSyncHandler& handler, TimeScale& scale, std::function<void()> on_quit,
                                 PausedRunHints hints)
    : handler_(handler),
      scale_(scale),
      on_quit_(std::move(on_quit)),
      hints_(std::move(hints)),
      tty_(isatty(STDIN_FILENO) != 0)
{
    if (!tty_ && !hints_.program.empty() && hints_.start_paused) {
        print_paused_hint(hints_.program, hints_.web_console, false);
    }
    thread_ = std::thread([this] { run(); });
}

OperatorConsole::~OperatorConsole() { stop(); }

void OperatorConsole::stop()
{
    stop_ = true;
    if (thread_.joinable()) thread_.join();
}

void OperatorConsole::command(const std::string& text)
{
    // The same vocabulary and checks as the web console (simsync/operator/operator_commands.hpp).
    try {
        const OperatorCommand c = parse_operator_command(text);
        if (c.kind == OperatorCommand::Kind::status) {
            std::printf("%s\n", status_line(handler_, meter_, false).c_str());
        } else if (c.kind == OperatorCommand::Kind::quit) {
            on_quit_();
        } else {
            apply_operator_command(c, handler_, &scale_);
        }
    } catch (const Error& e) {
        if (text.find_first_not_of(" \t\r") != std::string::npos) std::printf("error %s\n", e.what());
    }
    std::fflush(stdout);
}

void OperatorConsole::key(char c)
{
    OperatorCommand command;
    switch (c) {
    case 'p': command.kind = OperatorCommand::Kind::pause; break;
    case 'r': command.kind = OperatorCommand::Kind::resume; break;
    case 's': command.kind = OperatorCommand::Kind::step, command.steps = 1; break;
    case '+': command.kind = OperatorCommand::Kind::scale, command.scale = std::min(scale_.value() * 2, TimeScale::kMax); break;
    case '-': command.kind = OperatorCommand::Kind::scale, command.scale = std::max(scale_.value() / 2, TimeScale::kMin); break;
    case 'q': on_quit_(); return;
    default: return;
    }
    apply_operator_command(command, handler_, &scale_);
}

void OperatorConsole::run()
{
    std::optional<RawTerminal> raw;
    if (tty_) raw.emplace();
    std::string pending;
    auto last_status = WallClock::now();
    auto last_sample = WallClock::now();
    bool input_open = true;
    while (!stop_.load()) {
        std::optional<std::string> input = std::string();
        if (input_open) {
            input = read_some(std::chrono::milliseconds(50));
        } else {
            std::this_thread::sleep_for(std::chrono::milliseconds(50)); // only sampling is left to do
        }
        if (WallClock::now() - last_sample >= std::chrono::milliseconds(100)) {
            meter_.sample(handler_.now(), handler_.snapshot().grants);
            last_sample = WallClock::now();
        }
        if (!input) { // end of input: no more commands, the run goes on
            input_open = false;
            if (!tty_ && !hints_.program.empty() && handler_.state() == HandlerState::paused) {
                print_paused_hint(hints_.program, hints_.web_console, true);
            }
            continue;
        }
        if (tty_) {
            for (const char c : *input) key(c);
            if (WallClock::now() - last_status >= std::chrono::milliseconds(250)) {
                winsize size{};
                const int columns = ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 ? size.ws_col : 0;
                std::fputs(redraw_status(status_line(handler_, meter_, true), columns).c_str(), stdout);
                std::fflush(stdout);
                last_status = WallClock::now();
            }
            continue;
        }
        pending += *input;
        for (std::size_t eol; (eol = pending.find('\n')) != std::string::npos;) {
            const std::string line = pending.substr(0, eol);
            pending.erase(0, eol + 1);
            command(line);
        }
    }
}

} // namespace simsync::examples
