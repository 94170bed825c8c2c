#include "command_line.hpp"

#include <simsync/clock/time_scale.hpp>
#include <simsync/config/config.hpp>
#include <simsync/core/error.hpp>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <sstream>
#include <typeinfo>

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

// What a custom value type's validate throws: "--<option>: expected <what>,
// got '<text>'" (Boost fills in the option's name as it stores the value).
class ExpectedValue : public po::error_with_option_name {
public:
    ExpectedValue(const std::string& expected, const std::string& got)
        : po::error_with_option_name("%canonical_option%: expected " + expected + ", got '%value%'")
    {
        set_substitute("value", got);
    }
};

template <class T>
std::string integer_range()
{
    return "in [" + std::to_string(std::numeric_limits<T>::min()) + ", " +
           std::to_string(std::numeric_limits<T>::max()) + "]";
}

template <class T, class... More>
std::string expected_integer(const std::type_info& type)
{
    if (type == typeid(T)) {
        return std::string(std::numeric_limits<T>::is_signed ? "an integer " : "an unsigned integer ") +
               integer_range<T>();
    }
    if constexpr (sizeof...(More) > 0) {
        return expected_integer<More...>(type);
    } else {
        return "a valid value";
    }
}

// What a typed option takes, in words, for options without a value type of
// their own (those say it themselves: ExpectedValue).
std::string expected_of(const po::option_description& option)
{
    const auto* typed = dynamic_cast<const po::typed_value_base*>(option.semantic().get());
    if (typed == nullptr) return "a valid value";
    const std::type_info& type = typed->value_type();
    if (type == typeid(double) || type == typeid(float)) return "a number";
    return expected_integer<short, unsigned short, int, unsigned, long, unsigned long, long long, unsigned long long>(
        type);
}

// Boost's "the argument ('abc') for option '--x' is invalid", said as what was
// expected: the text comes from the parsed options, the type from the option.
std::string explain_invalid_value(const po::invalid_option_value& e, const po::parsed_options& parsed,
                                  const po::options_description& all)
{
    std::string name = e.get_option_name();
    const std::string key = name.substr(name.find_first_not_of('-') == std::string::npos ? 0 : name.find_first_not_of('-'));
    for (const po::option& o : parsed.options) {
        if (o.string_key != key) continue;
        const po::option_description* d = all.find_nothrow(o.string_key, false);
        if (d == nullptr) break;
        const std::string got = o.value.empty() ? std::string() : o.value.front();
        return "--" + key + ": expected " + expected_of(*d) + ", got '" + got + "'";
    }
    return e.what();
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
        const po::parsed_options parsed =
            po::command_line_parser(argc, argv).options(all).positional(cli.positional).style(style).run();
        try {
            po::store(parsed, values);
        } catch (const po::invalid_option_value& e) {
            throw OptionError(explain_invalid_value(e, parsed, all));
        }
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

void validate(boost::any& to, const std::vector<std::string>& values, DurationArgument*, int)
{
    po::validators::check_first_occurrence(to);
    const std::string& text = po::validators::get_single_string(values);
    try {
        to = DurationArgument{parse_duration(text, "s")};
    } catch (const Error&) {
        throw ExpectedValue("a duration: seconds (2.5) or a number and a unit: ns, us, ms, s, min (1ms, 2.5s)", text);
    }
}

std::optional<std::chrono::nanoseconds> duration_option(const po::variables_map& values, const std::string& option)
{
    if (values.count(option) == 0) return std::nullopt;
    return values[option].as<DurationArgument>().value;
}

namespace {

std::string scale_expected()
{
    std::ostringstream text;
    text << "0 (unpaced) or a time scale in [" << TimeScale::kMin << ", " << TimeScale::kMax << "]";
    return text.str();
}

} // namespace

void validate(boost::any& to, const std::vector<std::string>& values, ScaleArgument*, int)
{
    po::validators::check_first_occurrence(to);
    const std::string& text = po::validators::get_single_string(values);
    double x = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) throw ExpectedValue(scale_expected(), text);
    to = ScaleArgument{x};
}

void add_scale_option(po::options_description& options)
{
    options.add_options()("scale", po::value<ScaleArgument>()->value_name("X"), kScaleHelp);
}

void check_scale_option(const po::variables_map& values)
{
    if (values.count("scale") == 0) return;
    const double x = values["scale"].as<ScaleArgument>().value;
    if (x == 0) return;
    if (!std::isfinite(x) || x < TimeScale::kMin || x > TimeScale::kMax) {
        std::ostringstream message;
        message << "expected " << scale_expected() << ", got " << x;
        option_error("scale", message.str());
    }
}

void apply_scale_option(const po::variables_map& values, bool& paced, double& scale)
{
    if (values.count("scale") == 0) return;
    const double x = values["scale"].as<ScaleArgument>().value;
    paced = x != 0;
    if (paced) scale = x;
}

void check_duration_option(const po::variables_map& values)
{
    const auto d = duration_option(values, "duration");
    if (!d) return;
    if (!(d->count() > 0 && *d <= std::chrono::seconds(1'000'000))) {
        option_error("duration", "expected simulated time in (0, 1e6 s], got " + format_seconds(SimDuration{*d}) + " s");
    }
}

} // namespace simsync::examples
