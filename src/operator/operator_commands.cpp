#include <simsync/core/error.hpp>
#include <simsync/operator/operator_commands.hpp>

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

namespace simsync {

const char* to_string(OperatorCommand::Kind kind) noexcept
{
    switch (kind) {
    case OperatorCommand::Kind::pause: return "pause";
    case OperatorCommand::Kind::resume: return "resume";
    case OperatorCommand::Kind::step: return "step";
    case OperatorCommand::Kind::run_until: return "until";
    case OperatorCommand::Kind::scale: return "scale";
    case OperatorCommand::Kind::revoke: return "revoke";
    case OperatorCommand::Kind::status: return "status";
    case OperatorCommand::Kind::quit: return "quit";
    }
    return "?";
}

namespace {

bool blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string_view trim(std::string_view s)
{
    while (!s.empty() && blank(s.front())) s.remove_prefix(1);
    while (!s.empty() && blank(s.back())) s.remove_suffix(1);
    return s;
}

// Splits off the first word; `rest` keeps everything after it, trimmed.
std::string_view first_word(std::string_view line, std::string_view& rest)
{
    std::size_t end = 0;
    while (end < line.size() && !blank(line[end])) ++end;
    rest = trim(line.substr(end));
    return line.substr(0, end);
}

// Quotes user text for a message, cut short and with control characters shown
// as '?', so that an error message stays one readable line.
std::string quoted(std::string_view text)
{
    constexpr std::size_t kMax = 40;
    std::string out = "'";
    for (std::size_t i = 0; i < text.size() && i < kMax; ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        out += (c < 0x20 || c == 0x7f) ? '?' : static_cast<char>(c);
    }
    if (text.size() > kMax) out += "...";
    return out + "'";
}

[[noreturn]] void fail(const std::string& what) { throw Error(errc::invalid_argument, what); }

std::string_view one_argument(std::string_view command, std::string_view rest, const char* what)
{
    if (rest.empty()) fail(std::string(command) + ": expected " + what);
    std::string_view after;
    const std::string_view word = first_word(rest, after);
    if (!after.empty()) fail(std::string(command) + ": expected only " + what + ", got " + quoted(rest));
    return word;
}

std::uint64_t parse_steps(std::string_view text)
{
    std::uint64_t n = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (text.empty() || text.front() == '+' || ec != std::errc{} || end != text.data() + text.size() || n < 1 ||
        n > OperatorCommand::kMaxSteps) {
        fail("step: expected a whole number of steps from 1 to " + std::to_string(OperatorCommand::kMaxSteps) +
             ", got " + quoted(text));
    }
    return n;
}

// A finite decimal number, all of `text`; nullopt-like failure through `ok`.
bool parse_double(std::string_view text, double& value)
{
    if (text.empty()) return false;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    return ec == std::errc{} && end == text.data() + text.size() && std::isfinite(value);
}

SimTime parse_until(std::string_view command, std::string_view text)
{
    std::string_view number = text;
    if (!number.empty() && number.back() == 's') number.remove_suffix(1);
    double seconds = 0;
    constexpr double kMaxSeconds = 1e9; // about 31 years, far below SimTime's limit
    if (!parse_double(number, seconds) || seconds < 0 || seconds > kMaxSeconds) {
        fail(std::string(command) + ": expected a simulated time in seconds from 0 to 1e9, got " + quoted(text));
    }
    return SimTime{std::chrono::duration_cast<SimDuration>(std::chrono::duration<double>(seconds))};
}

double parse_scale(std::string_view text)
{
    double x = 0;
    if (!parse_double(text, x) || x < TimeScale::kMin || x > TimeScale::kMax) {
        char range[64];
        std::snprintf(range, sizeof range, "from %g to %g", TimeScale::kMin, TimeScale::kMax);
        fail(std::string("scale: expected a time scale ") + range + ", got " + quoted(text));
    }
    return x;
}

} // namespace

OperatorCommand parse_operator_command(std::string_view line)
{
    std::string_view rest;
    const std::string_view word = first_word(trim(line), rest);
    OperatorCommand c;
    auto no_argument = [&](OperatorCommand::Kind kind) {
        if (!rest.empty()) fail(std::string(word) + ": takes no argument, got " + quoted(rest));
        c.kind = kind;
        return c;
    };
    if (word == "pause") return no_argument(OperatorCommand::Kind::pause);
    if (word == "resume") return no_argument(OperatorCommand::Kind::resume);
    if (word == "status") return no_argument(OperatorCommand::Kind::status);
    if (word == "quit") return no_argument(OperatorCommand::Kind::quit);
    if (word == "step") {
        c.kind = OperatorCommand::Kind::step;
        c.steps = rest.empty() ? 1 : parse_steps(one_argument(word, rest, "a number of steps"));
        return c;
    }
    if (word == "until" || word == "run_until") {
        c.kind = OperatorCommand::Kind::run_until;
        c.until = parse_until(word, one_argument(word, rest, "a simulated time in seconds"));
        return c;
    }
    if (word == "scale") {
        c.kind = OperatorCommand::Kind::scale;
        c.scale = parse_scale(one_argument(word, rest, "a time scale"));
        return c;
    }
    if (word == "revoke") {
        if (rest.empty()) fail("revoke: expected the name of an accessor");
        c.kind = OperatorCommand::Kind::revoke;
        c.name = std::string(rest);
        return c;
    }
    if (word.empty()) fail("empty command (pause, resume, step N, until T, scale X, revoke NAME, status, quit)");
    fail("unknown command " + quoted(word) + " (pause, resume, step N, until T, scale X, revoke NAME, status, quit)");
}

std::string apply_operator_command(const OperatorCommand& c, SimSyncHandler& handler, TimeScale* scale)
{
    switch (c.kind) {
    case OperatorCommand::Kind::pause:
        handler.pause();
        return "paused at " + format_seconds(handler.now()) + " s";
    case OperatorCommand::Kind::resume:
        handler.resume();
        return "resumed at " + format_seconds(handler.now()) + " s";
    case OperatorCommand::Kind::step:
        handler.step(c.steps);
        return "stepping " + std::to_string(c.steps) + (c.steps == 1 ? " step" : " steps");
    case OperatorCommand::Kind::run_until: {
        const SimTime now = handler.now();
        if (c.until <= now) {
            throw Error(errc::invalid_argument, "until: " + format_seconds(c.until) +
                                                    " s is not after the current time " + format_seconds(now) + " s");
        }
        handler.run_until(c.until);
        return "running until " + format_seconds(round_to_grid(c.until, handler.step_size(), Rounding::down)) + " s";
    }
    case OperatorCommand::Kind::scale: {
        if (scale == nullptr) throw Error(errc::invalid_state, "scale: this host has no time scale");
        scale->set(c.scale);
        char buf[64];
        std::snprintf(buf, sizeof buf, "time scale %g", c.scale);
        return buf;
    }
    case OperatorCommand::Kind::revoke:
        if (!handler.revoke(c.name)) {
            throw Error(errc::invalid_argument, "revoke: no accessor is named " + quoted(c.name));
        }
        return "revoked " + quoted(c.name);
    case OperatorCommand::Kind::status:
    case OperatorCommand::Kind::quit: return "";
    }
    return "";
}

} // namespace simsync
