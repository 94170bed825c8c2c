#pragma once
// What the example programs share for their command lines, on
// Boost.Program_options: `--help` prints every option (exit 0); a bad or
// unknown option is reported naming the option and what it expects (exit 2);
// and the options several programs take (--scale, --duration) mean the same
// in all. Example code, not library API.

#include <boost/program_options.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace simsync::examples {

namespace po = boost::program_options;

// One program's command line. Fill `options` (shown by --help; --help itself is
// added by parse_command_line), `hidden` (test hooks, parsed but not shown) and
// `positional`, then call parse_command_line.
struct CommandLine {
    std::string program;  // "simsync-demo"
    std::string synopsis; // what follows "usage: <program> "
    std::string summary;  // a line or two under the usage line
    std::string epilogue; // after the options (stdin commands, exit codes, ...)
    po::options_description options{"options"};
    po::options_description hidden{"hidden"};
    po::positional_options_description positional;
};

// Parses argv. Returns the values, or nullopt with `exit_code` set: 0 after
// printing the help (usage, summary, every option, epilogue) to stdout; 2 after
// printing "<program>: <error naming the option>" and the usage line to stderr.
// A value that does not convert to its option's type reads "--<option>:
// expected <what the type takes>, got '<text>'" (not Boost's "the argument
// ... is invalid"). `check` sees the parsed values and reports a bad one with
// option_error(). Option names are matched exactly (no abbreviations).
std::optional<po::variables_map> parse_command_line(int argc, char** argv, const CommandLine& command_line,
                                                    int& exit_code,
                                                    const std::function<void(const po::variables_map&)>& check = {});

// Reports a bad option value from a `check`: "--<option>: <message>".
[[noreturn]] void option_error(const std::string& option, const std::string& message);

// An unsigned decimal (no sign, no wrap-around as lexical_cast does for "-1").
std::uint64_t parse_unsigned_option(const std::string& option, const std::string& text);

// A span of time on the command line: a plain number of seconds ("2.5") or a
// number and a unit as in the scenario files ("1ms", "2.5s", "250us", "2min";
// simsync::parse_duration). Exact integer nanoseconds.
//   po::value<DurationArgument>()->value_name("DURATION")
struct DurationArgument {
    std::chrono::nanoseconds value{};
};
// How Boost.Program_options reads a DurationArgument (found by argument-dependent
// lookup); a bad one reads "--<option>: expected a duration ..., got '<text>'".
void validate(boost::any& to, const std::vector<std::string>& values, DurationArgument*, int);
// The duration an option was given, if it was.
std::optional<std::chrono::nanoseconds> duration_option(const po::variables_map& values, const std::string& option);

// --scale X, one meaning for every program: X in [TimeScale::kMin,
// TimeScale::kMax] paces the run at X times real time (even if the scenario
// turned its pacer off); 0 runs unpaced, as fast as the world steps (what
// `pacer.enabled: false` does in a scenario; `time.scale` itself stays > 0).
// Without the option the scenario decides.
inline constexpr const char* kScaleHelp =
    "pace at X times real time, X in [1e-06, 1e+06] (default: the scenario's time.scale); "
    "0: unpaced, as fast as possible (as pacer.enabled: false)";
void add_scale_option(po::options_description& options);
// --scale's value: what `--scale fast` is told it should be.
struct ScaleArgument {
    double value = 0;
};
void validate(boost::any& to, const std::vector<std::string>& values, ScaleArgument*, int);
// Checks --scale if given (for a `check`).
void check_scale_option(const po::variables_map& values);
// Applies --scale if given: `paced` and `scale` are the scenario's on entry.
void apply_scale_option(const po::variables_map& values, bool& paced, double& scale);

// --duration DURATION (a DurationArgument) of simulated time, in (0, 1e6 s]:
// the help text of every program's --duration, and its check (for a `check`).
inline constexpr const char* kDurationHelp =
    "simulated time: seconds (2.5) or a number and a unit (1ms, 2.5s, 250us, 2min), in (0, 1e6 s]";
void check_duration_option(const po::variables_map& values);

} // namespace simsync::examples
