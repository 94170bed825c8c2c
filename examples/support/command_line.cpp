#include "command_line.hpp"

#include <simsync/time_scale.hpp>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

namespace simsync::examples {

namespace {

// What check functions throw; parse_command_line reports it like po::error.
class OptionError : public po::error {
public:
    using po::error::error;
};

void print_usage(std::FILE* to, const CommandLine& cli)
{
    std::fprintf(to, "usage: %s %s\n", cli.program.c_str(), cli.synopsis.c_str());
}

} // namespace

void option_error(const std::string& option, const std::string& message)
{
    throw OptionError("--" + option + ": " + message);
}

std::uint64_t parse_unsigned_option(const std::string& option, const std::string& text)
{
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) {
        option_error(option, "expected an unsigned integer, got '" + text + "'");
    }
    return value;
}

std::optional<po::variables_map> parse_command_line(int argc, char** argv, const CommandLine& cli, int& exit_code,
                                                    const std::function<void(const po::variables_map&)>& check)
{
    po::options_description visible = cli.options;
    visible.add_options()("help,h", "print this help and exit");
    po::options_description all;
    all.add(visible).add(cli.hidden);
    po::variables_map values;
    try {
        const int style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
        po::store(po::command_line_parser(argc, argv).options(all).positional(cli.positional).style(style).run(),
                  values);
        if (values.count("help") != 0) {
            print_usage(stdout, cli);
            if (!cli.summary.empty()) std::printf("%s\n", cli.summary.c_str());
            std::ostringstream text;
            text << visible;
            std::printf("\n%s", text.str().c_str());
            if (!cli.epilogue.empty()) std::printf("\n%s\n", cli.epilogue.c_str());
            exit_code = 0;
            return std::nullopt;
        }
        po::notify(values);
        if (check) check(values);
    } catch (const po::error& e) {
        std::fprintf(stderr, "%s: %s\n", cli.program.c_str(), e.what());
        print_usage(stderr, cli);
        std::fprintf(stderr, "(%s --help lists every option)\n", cli.program.c_str());
        exit_code = 2;
        return std::nullopt;
    }
    return values;
}

void add_scale_option(po::options_description& options)
{
    options.add_options()("scale", po::value<double>()->value_name("X"), kScaleHelp);
}

void check_scale_option(const po::variables_map& values)
{
    if (values.count("scale") == 0) return;
    const double x = values["scale"].as<double>();
    if (x == 0) return;
    if (!std::isfinite(x) || x < TimeScale::kMin || x > TimeScale::kMax) {
        std::ostringstream message;
        message << "expected 0 (unpaced) or a time scale in [" << TimeScale::kMin << ", " << TimeScale::kMax
                << "], got " << x;
        option_error("scale", message.str());
    }
}

void apply_scale_option(const po::variables_map& values, bool& paced, double& scale)
{
    if (values.count("scale") == 0) return;
    const double x = values["scale"].as<double>();
    paced = x != 0;
    if (paced) scale = x;
}

void check_duration_option(const po::variables_map& values)
{
    if (values.count("duration") == 0) return;
    const double s = values["duration"].as<double>();
    if (!(s > 0 && s <= 1e6)) {
        std::ostringstream message;
        message << "expected simulated seconds in (0, 1e6], got " << s;
        option_error("duration", message.str());
    }
}

} // namespace simsync::examples
