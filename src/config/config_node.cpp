// ConfigNode: a YAML node that knows its place (file:line:column and key path)
// and reads typed values, durations and rates with errors that name it.

#include <simsync/accessors/clock_publisher.hpp>
#include <simsync/clock/time_scale.hpp>
#include <simsync/clock/time_source.hpp>
#include <simsync/config/config.hpp>

#include "node_access.hpp"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <string_view>
#include <type_traits>

namespace simsync {

// A duration read from a file is a plain span of nanoseconds; the field it lands
// in says which clock it is measured on. That only works while these agree.
static_assert(std::is_same_v<std::chrono::nanoseconds, SimDuration>);
static_assert(std::is_same_v<std::chrono::nanoseconds, WallClock::duration>);

namespace {
__extension__ typedef __int128 Int128; // exact products of two 64-bit values

std::string locate(const std::string& file, int line, int column, const std::string& key, const std::string& msg)
{
    std::ostringstream out;
    // A place that is not known (0:0: the file as a whole, e.g. one that cannot
    // be opened) is not printed as one.
    if (line == 0 && column == 0 && key.empty()) {
        out << file << ": " << msg;
        return out.str();
    }
    out << file << ':' << line << ':' << column << ": " << (key.empty() ? std::string("(root)") : key) << ": " << msg;
    return out.str();
}

// yaml-cpp marks are 0-based and -1 when unknown; ours are 1-based and 0 when unknown.
int one_based(int zero_based) { return zero_based < 0 ? 0 : zero_based + 1; }

std::string join_list(std::initializer_list<const char*> names)
{
    std::string list;
    for (const char* n : names) list += (list.empty() ? "" : ", ") + std::string(n);
    return list;
}

std::string describe_kind(const YAML::Node& n)
{
    if (n.IsMap()) return "a map";
    if (n.IsSequence()) return "a list";
    if (n.IsScalar()) return "'" + n.Scalar() + "'";
    return "nothing";
}

} // namespace

// ------------------------------------------------------------------ ConfigError

ConfigError::ConfigError(std::string file, int line, int column, std::string key, const std::string& message)
    : Error(errc::invalid_argument, locate(file, line, column, key, message)), file_(std::move(file)), line_(line),
      column_(column), key_(std::move(key))
{
}

// ------------------------------------------------------------- FirstConfigError

void FirstConfigError::keep(const ConfigError& e)
{
    // Unplaced errors (line 0) go last.
    auto rank = [](const ConfigError& x) {
        return std::pair<long long, int>{x.line() == 0 ? std::numeric_limits<long long>::max() : x.line(), x.column()};
    };
    if (!first_ || rank(e) < rank(*first_)) first_ = e;
}

void FirstConfigError::throw_if_any() const
{
    if (first_) throw *first_;
}

// ------------------------------------------------------------------- ConfigNode

ConfigNode::ConfigNode(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
ConfigNode::ConfigNode(const ConfigNode&) = default;
ConfigNode::ConfigNode(ConfigNode&&) noexcept = default;
ConfigNode& ConfigNode::operator=(const ConfigNode&) = default;
ConfigNode& ConfigNode::operator=(ConfigNode&&) noexcept = default;
ConfigNode::~ConfigNode() = default;

namespace {

// The whole-document rules of ConfigNode::parse: keys are plain scalars and
// unique per map, nesting is bounded (an alias to an enclosing node would nest
// without end), and so is the number of nodes visited (aliases reuse nodes, so
// a small file can describe an exponentially large tree).
class DocumentCheck {
public:
    explicit DocumentCheck(const std::string& file) : file_(file) {}

    void operator()(const YAML::Node& node, int depth)
    {
        if (++visited_ > ConfigNode::kMaxNodes) {
            fail(node.Mark(), "the document has more than " + std::to_string(ConfigNode::kMaxNodes) +
                                  " nodes (each use of an alias counted again)");
        }
        if (depth > ConfigNode::kMaxDepth) {
            fail(node.Mark(), "nested deeper than " + std::to_string(ConfigNode::kMaxDepth) + " levels");
        }
        if (!node.IsMap() && !node.IsSequence()) return;
        // An alias to an enclosing map or list (`a: &x [*x]`) is a cycle.
        for (const YAML::Node& ancestor : ancestors_) {
            if (ancestor.is(node)) fail(node.Mark(), "an alias refers to a map or list that contains it");
        }
        ancestors_.push_back(node);
        if (node.IsMap()) {
            std::set<std::string, std::less<>> seen;
            for (const auto& kv : node) {
                if (!kv.first.IsScalar()) fail(kv.first.Mark(), "a key must be a plain scalar, got " + describe_kind(kv.first));
                const std::string& key = kv.first.Scalar();
                path_.push_back("." + key);
                if (!seen.insert(key).second) fail(kv.first.Mark(), "duplicate key");
                (*this)(kv.second, depth + 1);
                path_.pop_back();
            }
        } else if (node.IsSequence()) {
            std::size_t i = 0;
            for (const auto& child : node) {
                path_.push_back("[" + std::to_string(i++) + "]");
                (*this)(child, depth + 1);
                path_.pop_back();
            }
        }
        ancestors_.pop_back();
    }

private:
    // The key path is only spelled out when it is needed.
    [[noreturn]] void fail(const YAML::Mark& mark, const std::string& message) const
    {
        std::string path;
        for (const std::string& part : path_) path += part;
        if (!path.empty() && path.front() == '.') path.erase(0, 1);
        throw ConfigError(file_, one_based(mark.line), one_based(mark.column), path, message);
    }

    const std::string& file_;
    std::int64_t visited_ = 0;
    std::vector<std::string> path_;
    std::vector<YAML::Node> ancestors_;
};

} // namespace

namespace {

// Counts the documents of a YAML stream and notes where each starts.
class DocumentStarts final : public YAML::EventHandler {
public:
    std::vector<YAML::Mark> starts;
    void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnMapEnd() override {}
};

// Throws unless `text` holds at most one YAML document. Also guards against a
// yaml-cpp 0.7 defect: a token that cannot start a node (a stray ',' or '}'
// before or after the document) is never consumed, so the parser reports an
// endless row of empty documents there (YAML::LoadAll never returns; YAML::Load
// silently ignores the rest of the file). A second document starts with `---`;
// anything else where one starts is reported as the syntax error it is.
void check_one_document(const std::string& text, const std::string& file)
{
    std::istringstream in(text);
    YAML::Parser parser(in);
    DocumentStarts documents;
    while (documents.starts.size() < 2 && parser.HandleNextDocument(documents)) {
    }
    if (documents.starts.size() < 2) return;
    const YAML::Mark& second = documents.starts[1];
    const bool marker = second.pos >= 0 && text.compare(static_cast<std::size_t>(second.pos), 3, "---") == 0;
    throw ConfigError(file, one_based(second.line), one_based(second.column), "",
                      marker ? "a scenario file holds one YAML document; a second one starts here"
                             : "YAML syntax error: unexpected text after the document");
}

} // namespace

ConfigNode ConfigNode::parse(const std::string& text, const std::string& file)
{
    YAML::Node root;
    try {
        check_one_document(text, file);
        root = YAML::Load(text);
    } catch (const YAML::DeepRecursion& e) {
        throw ConfigError(file, one_based(e.mark.line), one_based(e.mark.column), "",
                          "YAML nesting too deep for the parser (" + std::to_string(e.depth()) + " levels)");
    } catch (const YAML::Exception& e) {
        throw ConfigError(file, one_based(e.mark.line), one_based(e.mark.column), "", "YAML syntax error: " + e.msg);
    }
    DocumentCheck{file}(root, 0);
    YAML::Mark mark = root.IsDefined() && !root.IsNull() ? root.Mark() : YAML::Mark();
    if (!valid(mark)) mark = YAML::Mark();
    return ConfigNodeAccess::make(file, root, "", mark);
}

ConfigNode ConfigNode::load_file(const std::string& path)
{
    // C stdio rather than a stream: errno says why a file cannot be opened or read.
    errno = 0;
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (file == nullptr) throw ConfigError(path, 0, 0, "", std::string("cannot open the file: ") + std::strerror(errno));
    std::string text;
    char buffer[65536];
    std::size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0) text.append(buffer, n);
    const int read_error = std::ferror(file) ? errno : 0;
    std::fclose(file);
    if (read_error != 0) throw ConfigError(path, 0, 0, "", std::string("cannot read the file: ") + std::strerror(read_error));
    return parse(text, path);
}

const std::string& ConfigNode::path() const noexcept { return impl_->path; }
const std::string& ConfigNode::file() const noexcept { return impl_->file; }
int ConfigNode::line() const noexcept { return one_based(impl_->mark.line); }
int ConfigNode::column() const noexcept { return one_based(impl_->mark.column); }
bool ConfigNode::is_map() const { return impl_->node.IsMap(); }
bool ConfigNode::is_list() const { return impl_->node.IsSequence(); }
bool ConfigNode::is_scalar() const { return impl_->node.IsScalar(); }
bool ConfigNode::is_null() const { return !impl_->node.IsDefined() || impl_->node.IsNull(); }

void ConfigNode::fail(const std::string& message) const
{
    throw ConfigError(impl_->file, line(), column(), impl_->path, message);
}

void ConfigNode::fail_key(const std::string& key, const std::string& message) const
{
    if (impl_->node.IsMap()) {
        for (const auto& kv : impl_->node) {
            if (kv.first.IsScalar() && kv.first.Scalar() == key) {
                throw ConfigError(impl_->file, one_based(kv.first.Mark().line), one_based(kv.first.Mark().column),
                                  join_path(impl_->path, key), message);
            }
        }
    }
    throw ConfigError(impl_->file, line(), column(), join_path(impl_->path, key), message);
}

std::optional<ConfigNode> ConfigNode::find(const std::string& key) const
{
    if (!impl_->node.IsMap()) {
        if (is_null()) return std::nullopt;
        fail("expected a map with key '" + key + "', got " + describe_kind(impl_->node));
    }
    const YAML::Node child = impl_->node[key];
    if (!child.IsDefined() || child.IsNull()) return std::nullopt;
    return ConfigNodeAccess::make(impl_->file, child, join_path(impl_->path, key), child.Mark());
}

ConfigNode ConfigNode::at(const std::string& key) const
{
    if (auto child = find(key)) return *child;
    throw ConfigError(impl_->file, line(), column(), join_path(impl_->path, key), "required key is missing");
}

std::vector<std::string> ConfigNode::keys() const
{
    if (!impl_->node.IsMap()) fail("expected a map, got " + describe_kind(impl_->node));
    std::vector<std::string> out;
    for (const auto& kv : impl_->node) out.push_back(kv.first.Scalar());
    return out;
}

std::vector<ConfigNode> ConfigNode::elements() const
{
    if (!impl_->node.IsSequence()) fail("expected a list, got " + describe_kind(impl_->node));
    std::vector<ConfigNode> out;
    std::size_t i = 0;
    for (const YAML::Node& child : impl_->node) {
        // A null element (`- ` alone) has no place of its own: use the list's.
        const YAML::Mark mark = valid(child.Mark()) ? child.Mark() : impl_->mark;
        out.push_back(ConfigNodeAccess::make(impl_->file, child, impl_->path + "[" + std::to_string(i++) + "]", mark));
    }
    return out;
}

void ConfigNode::allow_only(std::initializer_list<const char*> allowed) const
{
    if (!impl_->node.IsMap()) fail("expected a map, got " + describe_kind(impl_->node));
    for (const auto& kv : impl_->node) {
        const std::string& key = kv.first.Scalar();
        const bool known = std::any_of(allowed.begin(), allowed.end(), [&](const char* a) { return key == a; });
        if (!known) fail_key(key, "unknown key; expected one of: " + join_list(allowed));
    }
}

std::string ConfigNode::as_string() const
{
    if (!impl_->node.IsScalar()) fail("expected a value, got " + describe_kind(impl_->node));
    return impl_->node.Scalar();
}

bool ConfigNode::as_bool() const
{
    const std::string s = as_string();
    // YAML 1.2 core schema, plus the YAML 1.1 words yaml-cpp reads as booleans
    // (except its one-letter y/n), each as lower case, Capitalised or UPPER CASE.
    static const std::set<std::string, std::less<>> kTrue = {"true", "True", "TRUE", "yes", "Yes",
                                                             "YES",  "on",   "On",   "ON"};
    static const std::set<std::string, std::less<>> kFalse = {"false", "False", "FALSE", "no", "No",
                                                              "NO",    "off",   "Off",   "OFF"};
    if (kTrue.count(s) != 0) return true;
    if (kFalse.count(s) != 0) return false;
    fail("expected a boolean (true or false), got '" + s + "'");
}

namespace {

// YAML 1.2 core schema float syntax without .inf and .nan:
// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool is_decimal_number(std::string_view s)
{
    std::size_t i = 0;
    auto digits = [&] {
        const std::size_t start = i;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
        return i - start;
    };
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    const std::size_t whole = digits();
    std::size_t fraction = 0;
    if (i < s.size() && s[i] == '.') {
        ++i;
        fraction = digits();
    }
    if (whole == 0 && fraction == 0) return false;
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        ++i;
        if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
        if (digits() == 0) return false;
    }
    return i == s.size();
}

} // namespace

std::int64_t ConfigNode::as_int() const
{
    const std::string s = as_string();
    std::string_view digits = s;
    const bool plus = !digits.empty() && digits.front() == '+';
    if (plus) digits.remove_prefix(1); // from_chars takes no '+'
    const bool minus = !plus && !digits.empty() && digits.front() == '-';
    if (!all_digits(minus ? digits.substr(1) : digits)) fail("expected an integer, got '" + s + "'");
    std::int64_t value = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec == std::errc::result_out_of_range) fail("integer out of range: '" + s + "'");
    if (ec != std::errc{} || end != digits.data() + digits.size()) fail("expected an integer, got '" + s + "'");
    return value;
}

double ConfigNode::as_double() const
{
    const std::string s = as_string();
    if (!is_decimal_number(s)) {
        std::string lower = s;
        std::transform(lower.begin(), lower.end(), lower.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (lower.find("inf") != std::string::npos || lower.find("nan") != std::string::npos) {
            fail("expected a finite number, got '" + s + "'");
        }
        fail("expected a number, got '" + s + "'");
    }
    std::string_view text = s;
    if (text.front() == '+') text.remove_prefix(1); // from_chars takes no '+'
    double value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec == std::errc::result_out_of_range || (ec == std::errc{} && !std::isfinite(value))) {
        fail("number out of the range of a double: '" + s + "'");
    }
    if (ec != std::errc{} || end != text.data() + text.size()) fail("expected a number, got '" + s + "'");
    return value;
}

std::string ConfigNode::as_choice(std::initializer_list<const char*> choices) const
{
    const std::string s = as_string();
    for (const char* c : choices) {
        if (s == c) return s;
    }
    fail("expected one of: " + join_list(choices) + "; got '" + s + "'");
}

namespace {

// "12.345" -> {12345, 1000}; false unless a plain non-negative decimal whose
// numerator and denominator fit in int64. `decimals` counts digits after the point.
bool parse_decimal(std::string_view text, std::int64_t& num, std::int64_t& den, int& decimals)
{
    num = 0;
    den = 1;
    decimals = 0;
    bool seen_digit = false;
    bool after_point = false;
    for (char c : text) {
        if (c == '.' && !after_point) {
            after_point = true;
            continue;
        }
        if (c < '0' || c > '9') return false;
        const int digit = c - '0';
        if (num > (std::numeric_limits<std::int64_t>::max() - digit) / 10) return false;
        num = num * 10 + digit;
        if (after_point) {
            if (den > std::numeric_limits<std::int64_t>::max() / 10) return false;
            den *= 10;
            ++decimals;
        }
        seen_digit = true;
    }
    return seen_digit;
}

// "0.5 s" -> {"0.5", "s"}: the number is [0-9.]*, then any spaces, then the
// unit; nothing may follow the unit's letters and no space may sit inside the
// number ("1 0 ms" leaves "0 ms" as the unit, which is refused).
struct NumberAndUnit {
    std::string_view number;
    std::string_view unit;
};

NumberAndUnit split_unit(std::string_view s)
{
    std::size_t i = 0;
    while (i < s.size() && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.')) ++i;
    const std::string_view number = s.substr(0, i);
    while (i < s.size() && s[i] == ' ') ++i;
    return {number, s.substr(i)};
}

} // namespace

namespace {

// The scenario format's duration syntax, shared by ConfigNode::as_duration and
// parse_duration: the value, or why not (what was expected and what was got).
struct DurationOrError {
    std::chrono::nanoseconds value{};
    std::string error; // empty: `value` is valid
};

DurationOrError read_duration(std::string_view s, std::string_view bare_unit)
{
    const std::string got = "got '" + std::string(s) + "'";
    const std::string expected = bare_unit.empty()
                                     ? "expected a duration: a number >= 0 and a unit (ns, us, ms, s, min), e.g. 10ms "
                                       "or 0.5 s; " + got
                                     : "expected a duration: a number >= 0 of " + std::string(bare_unit) +
                                           " (2.5), or a number and a unit (ns, us, ms, s, min), e.g. 10ms or 0.5 s; " +
                                           got;
    if (!s.empty() && (s.front() == '-' || s.front() == '+')) return {{}, expected + " (durations have no sign)"};
    auto [number, unit] = split_unit(s);
    std::int64_t num = 0;
    std::int64_t den = 1;
    int decimals = 0;
    if (!parse_decimal(number, num, den, decimals)) return {{}, expected};
    if (unit.empty() && number.size() == s.size() && !bare_unit.empty()) unit = bare_unit;
    std::int64_t unit_ns = 0;
    if (unit == "ns") unit_ns = 1;
    else if (unit == "us") unit_ns = 1'000;
    else if (unit == "ms") unit_ns = 1'000'000;
    else if (unit == "s") unit_ns = 1'000'000'000;
    else if (unit == "min") unit_ns = 60'000'000'000;
    else if (unit.empty() && num == 0 && number.size() == s.size()) return {std::chrono::nanoseconds::zero(), {}};
    else return {{}, expected};
    const Int128 scaled = static_cast<Int128>(num) * unit_ns;
    if (scaled % den != 0) return {{}, "'" + std::string(s) + "' is not a whole number of nanoseconds"};
    const Int128 ns = scaled / den;
    if (ns > std::numeric_limits<std::int64_t>::max()) {
        return {{}, "'" + std::string(s) + "' is longer than about 292 years"};
    }
    return {std::chrono::nanoseconds{static_cast<std::int64_t>(ns)}, {}};
}

} // namespace

std::chrono::nanoseconds ConfigNode::as_duration() const
{
    const DurationOrError d = read_duration(as_string(), {});
    if (!d.error.empty()) fail(d.error);
    return d.value;
}

std::chrono::nanoseconds parse_duration(std::string_view text, std::string_view bare_unit)
{
    if (!bare_unit.empty() && bare_unit != "ns" && bare_unit != "us" && bare_unit != "ms" && bare_unit != "s" &&
        bare_unit != "min") {
        throw Error(errc::invalid_argument, "parse_duration: unknown unit '" + std::string(bare_unit) + "'");
    }
    const DurationOrError d = read_duration(text, bare_unit);
    if (!d.error.empty()) throw Error(errc::invalid_argument, d.error);
    return d.value;
}

std::pair<std::int64_t, std::int64_t> ConfigNode::as_rate() const
{
    const std::string s = as_string();
    const std::string expected = "expected a rate in Hz greater than 0, e.g. 30 or 29.97Hz; got '" + s + "'";
    const auto [number, unit] = split_unit(s);
    std::int64_t num = 0;
    std::int64_t den = 1;
    int decimals = 0;
    if ((!unit.empty() && unit != "Hz" && unit != "hz") || !parse_decimal(number, num, den, decimals) || num == 0) {
        fail(expected);
    }
    if (decimals > 9) fail("a rate has at most 9 decimal places; got '" + s + "'");
    // PeriodicSchedule keeps the period as 1e9 * den / num ns: at least 1 ns.
    if (static_cast<Int128>(num) > static_cast<Int128>(1'000'000'000) * den) {
        fail("a rate is at most 1 GHz (a period of at least 1 ns); got '" + s + "'");
    }
    return {num, den};
}

} // namespace simsync
