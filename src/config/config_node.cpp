#include <simsync/accessors/clock_publisher.hpp>
#include <simsync/clock/time_scale.hpp>
#include <simsync/clock/time_source.hpp>
#include <simsync/config/config.hpp>

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

bool valid(const YAML::Mark& mark) { return mark.line >= 0 && mark.column >= 0; }

std::string join_path(const std::string& parent, const std::string& key)
{
    return parent.empty() ? key : parent + "." + key;
}

std::string join_list(std::initializer_list<const char*> names)
{
    std::string list;
    for (const char* n : names) list += (list.empty() ? "" : ", ") + std::string(n);
    return list;
}

template <class Range>
std::string join_names(const Range& names)
{
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + std::string(n);
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

struct ConfigNode::Impl {
    std::string file;
    YAML::Node node;
    std::string path;
    YAML::Mark mark; // of the node, or of its parent (or its key) when the node is missing or null
};

// The loader's access to the representation: children that keep a null value
// (a section written as `web:`), and the place of a key.
struct ConfigNodeAccess {
    static const ConfigNode::Impl& impl(const ConfigNode& n) { return *n.impl_; }

    static ConfigNode make(const std::string& file, const YAML::Node& node, std::string path, YAML::Mark mark)
    {
        return ConfigNode(std::make_shared<const ConfigNode::Impl>(ConfigNode::Impl{file, node, std::move(path), mark}));
    }

    // The value of `key` in the map `n`, null or not, placed at the value (or at
    // the key when the value has no place of its own). The key must be there.
    static ConfigNode member(const ConfigNode& n, const std::string& key)
    {
        const ConfigNode::Impl& i = *n.impl_;
        for (const auto& kv : i.node) {
            if (kv.first.Scalar() != key) continue;
            const YAML::Mark value_mark = kv.second.Mark();
            const bool has_place = !kv.second.IsNull() && valid(value_mark);
            return make(i.file, kv.second, join_path(i.path, key), has_place ? value_mark : kv.first.Mark());
        }
        n.fail_key(key, "required key is missing");
    }
};

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

bool all_digits(std::string_view s)
{
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

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

// -------------------------------------------------------------- extensions

namespace {

constexpr std::array<const char*, 7> kCoreSections = {"handler", "time",  "world", "accessors",
                                                     "clock",   "pacer", "timers"};
constexpr const char* kUdpSink = "udp";

bool is_core_section(std::string_view key)
{
    return std::any_of(kCoreSections.begin(), kCoreSections.end(), [&](const char* s) { return key == s; });
}

std::vector<std::string> builtin_time_sources()
{
    static const std::vector<std::string> names = TimeSourceFactory().names();
    return names;
}

bool is_builtin_time_source(std::string_view name)
{
    const std::vector<std::string> names = builtin_time_sources();
    return std::find(names.begin(), names.end(), name) != names.end();
}

enum class Part { world_type, clock_sink, section, time_source };

const char* to_string(Part part)
{
    switch (part) {
    case Part::world_type: return "world type";
    case Part::clock_sink: return "clock sink kind";
    case Part::section: return "section";
    case Part::time_source: return "time source";
    }
    return "?";
}

void check_registration(Part part, const std::string& name, const ConfigValidator* validate)
{
    const std::string what = std::string("ScenarioExtensions: ") + to_string(part);
    if (name.empty()) throw Error(errc::invalid_argument, what + " with an empty name");
    if (validate != nullptr && !*validate) throw Error(errc::invalid_argument, what + " '" + name + "' has an empty validator");
    const bool builtin = (part == Part::clock_sink && name == kUdpSink) ||
                         (part == Part::section && is_core_section(name)) ||
                         (part == Part::time_source && is_builtin_time_source(name));
    if (builtin) throw Error(errc::duplicate_name, what + " '" + name + "' is built in");
}

template <class Map>
void add_unique(Map& map, Part part, std::string name, ConfigValidator validate)
{
    check_registration(part, name, &validate);
    if (map.count(name) != 0) {
        throw Error(errc::duplicate_name, std::string("ScenarioExtensions: ") + to_string(part) + " '" + name +
                                              "' is registered already");
    }
    map.emplace(std::move(name), std::move(validate));
}

void check_extensions(const ScenarioExtensions& e)
{
    for (const auto& [name, validate] : e.world_types) check_registration(Part::world_type, name, &validate);
    for (const auto& [name, validate] : e.clock_sinks) check_registration(Part::clock_sink, name, &validate);
    for (const auto& [name, validate] : e.sections) check_registration(Part::section, name, &validate);
    for (const auto& name : e.time_sources) check_registration(Part::time_source, name, nullptr);
}

// Runs a registered validator; a simsync::Error that does not name a place is
// reported at the node it was given.
void validate_with(const ConfigValidator& validate, const ConfigNode& n)
{
    try {
        validate(n);
    } catch (const ConfigError&) {
        throw;
    } catch (const Error& e) {
        n.fail(e.what());
    }
}

} // namespace

ScenarioExtensions& ScenarioExtensions::add_world_type(std::string name, ConfigValidator validate)
{
    add_unique(world_types, Part::world_type, std::move(name), std::move(validate));
    return *this;
}

ScenarioExtensions& ScenarioExtensions::add_clock_sink(std::string kind, ConfigValidator validate)
{
    add_unique(clock_sinks, Part::clock_sink, std::move(kind), std::move(validate));
    return *this;
}

ScenarioExtensions& ScenarioExtensions::add_section(std::string key, ConfigValidator validate)
{
    add_unique(sections, Part::section, std::move(key), std::move(validate));
    return *this;
}

ScenarioExtensions& ScenarioExtensions::add_time_source(std::string name)
{
    check_registration(Part::time_source, name, nullptr);
    if (time_sources.count(name) != 0) {
        throw Error(errc::duplicate_name, "ScenarioExtensions: time source '" + name + "' is registered already");
    }
    time_sources.insert(std::move(name));
    return *this;
}

// ------------------------------------------------------------------ the schema

namespace {

std::chrono::nanoseconds positive_duration(const ConfigNode& n, const char* what)
{
    const std::chrono::nanoseconds d = n.as_duration();
    if (d <= std::chrono::nanoseconds::zero()) n.fail(std::string("expected ") + what + " > 0, got '" + n.as_string() + "'");
    return d;
}

PeriodicSchedule read_schedule(const ConfigNode& n, PeriodicSchedule fallback)
{
    const auto rate = n.find("rate");
    const auto period = n.find("period");
    const auto offset_node = n.find("offset");
    if (rate && period) rate->fail("give either rate or period, not both");
    const SimDuration offset = offset_node ? offset_node->as_duration() : fallback.offset();
    try {
        if (rate) {
            const auto [num, den] = rate->as_rate();
            return PeriodicSchedule::from_rate(num, den, offset);
        }
        if (period) return PeriodicSchedule::from_period(positive_duration(*period, "a period"), offset);
        if (offset_node) return PeriodicSchedule::from_period(fallback.nominal_period(), offset);
    } catch (const ConfigError&) {
        throw;
    } catch (const Error& e) {
        n.fail(e.what());
    }
    return fallback;
}

// Checks the keys of the map `n` against `allowed` and reads them with `read`,
// reporting whichever error comes first in the document: an unknown key after
// a bad value names the bad value, as an unknown key before it is named first.
template <class Read>
void read_map(const ConfigNode& n, std::initializer_list<const char*> allowed, Read&& read)
{
    FirstConfigError first;
    if (first.check([&] { n.allow_only(allowed); }) || n.is_map()) first.check(std::forward<Read>(read));
    first.throw_if_any();
}

void read_handler_keys(const ConfigNode& n, ScenarioConfig& cfg)
{
    if (auto v = n.find("step")) cfg.handler.step = positive_duration(*v, "a step");
    if (auto v = n.find("rounding")) cfg.handler.rounding = parse_rounding(v->as_choice({"nearest", "up", "down"}));
    if (auto v = n.find("start_paused")) cfg.handler.start_paused = v->as_bool();
    if (auto v = n.find("step_thread")) {
        cfg.handler.step_thread = v->as_choice({"any", "host"}) == "host" ? StepThread::host : StepThread::any;
    }
}

void read_handler(const ConfigNode& n, ScenarioConfig& cfg)
{
    read_map(n, {"step", "rounding", "start_paused", "step_thread"}, [&] { read_handler_keys(n, cfg); });
}

void read_time_keys(const ConfigNode& n, const ScenarioExtensions& ext, ScenarioConfig& cfg)
{
    if (auto v = n.find("source")) {
        const std::string name = v->as_string();
        if (!is_builtin_time_source(name) && ext.time_sources.count(name) == 0) {
            std::set<std::string> known(ext.time_sources.begin(), ext.time_sources.end());
            for (const std::string& b : builtin_time_sources()) known.insert(b);
            v->fail("unknown time source '" + name + "'; expected one of: " + join_names(known));
        }
        cfg.time_source = name;
    }
    if (auto v = n.find("scale")) {
        const double scale = v->as_double();
        if (!(scale >= TimeScale::kMin && scale <= TimeScale::kMax)) {
            std::ostringstream range;
            range << "expected a time scale (simulated seconds per wall second) in [" << TimeScale::kMin << ", "
                  << TimeScale::kMax << "], got '" << v->as_string() << "'";
            if (scale == 0) range << " (to run unpaced, set pacer.enabled: false)";
            v->fail(range.str());
        }
        cfg.time_scale = scale;
    }
}

void read_time(const ConfigNode& n, const ScenarioExtensions& ext, ScenarioConfig& cfg)
{
    read_map(n, {"source", "scale"}, [&] { read_time_keys(n, ext, cfg); });
}

void read_world(const ConfigNode& n, const ScenarioExtensions& ext, ScenarioConfig& cfg)
{
    if (!n.is_map()) n.fail("expected a map with a type key, e.g. {type: bullet}");
    const ConfigNode type = n.at("type");
    const std::string name = type.as_string();
    const auto known = ext.world_types.find(name);
    if (known == ext.world_types.end()) {
        std::vector<std::string> names;
        for (const auto& w : ext.world_types) names.push_back(w.first);
        type.fail("unknown world type '" + name + "'; " +
                  (names.empty() ? std::string("this program registers no world types")
                                 : "this program knows: " + join_names(names)));
    }
    validate_with(known->second, n);
    cfg.world_type = name;
    cfg.world = n;
}

AccessorConfig read_accessor_keys(const ConfigNode& n)
{
    AccessorConfig a;
    a.name = n.at("name").as_string();
    if (a.name.empty()) n.at("name").fail("expected a non-empty name");
    if (!n.find("rate") && !n.find("period")) n.fail("an accessor needs a rate (Hz) or a period");
    a.schedule = read_schedule(n, a.schedule);
    if (auto v = n.find("kind")) a.kind = v->as_choice({"lockstep", "free"}) == "free" ? AccessorKind::free : AccessorKind::lockstep;
    if (auto v = n.find("mode")) {
        a.mode = v->as_choice({"shared", "exclusive"}) == "exclusive" ? AccessMode::exclusive : AccessMode::shared;
    }
    if (auto v = n.find("priority")) {
        const std::int64_t p = v->as_int();
        if (p < std::numeric_limits<int>::min() || p > std::numeric_limits<int>::max()) {
            v->fail("expected a priority in [" + std::to_string(std::numeric_limits<int>::min()) + ", " +
                    std::to_string(std::numeric_limits<int>::max()) + "], got " + std::to_string(p));
        }
        a.priority = static_cast<int>(p);
    }
    if (auto v = n.find("role")) a.role = v->as_string();
    a.node = n;
    return a;
}

AccessorConfig read_accessor(const ConfigNode& n)
{
    AccessorConfig value;
    read_map(n, {"name", "rate", "period", "offset", "kind", "mode", "priority", "role"},
             [&] { value = read_accessor_keys(n); });
    return value;
}

std::string describe(const ConfigNode& n)
{
    if (n.is_map()) return "a map";
    if (n.is_list()) return "a list";
    if (n.is_null()) return "nothing";
    return "'" + n.as_string() + "'";
}

ClockSinkConfig read_sink(const ConfigNode& n, const ScenarioExtensions& ext)
{
    std::vector<std::string> kinds{kUdpSink};
    for (const auto& k : ext.clock_sinks) kinds.push_back(k.first);
    const std::string expected = "a sink is a map with one key naming its kind (" + join_names(kinds) + ")";
    if (!n.is_map()) n.fail("expected " + expected + ", got " + describe(n));
    const std::vector<std::string> keys = n.keys();
    if (keys.size() != 1) {
        if (keys.empty()) n.fail("expected " + expected + ", got an empty map");
        n.fail_key(keys[1], "expected " + expected + "; this one has a second key");
    }
    const std::string& kind = keys.front();
    const auto known = ext.clock_sinks.find(kind);
    if (kind != kUdpSink && known == ext.clock_sinks.end()) {
        n.fail_key(kind, "unknown clock sink kind; expected one of: " + join_names(kinds));
    }
    const ConfigNode value = ConfigNodeAccess::member(n, kind);
    if (kind == kUdpSink) {
        const std::string text = value.as_string();
        try {
            return parse_udp_sink(text);
        } catch (const Error& e) {
            value.fail(e.what());
        }
    }
    validate_with(known->second, value);
    return ExtensionSinkConfig{kind, value};
}

void read_clock_keys(const ConfigNode& n, const ScenarioExtensions& ext, ScenarioConfig& cfg)
{
    if (auto v = n.find("enabled")) cfg.clock.enabled = v->as_bool();
    cfg.clock.schedule = read_schedule(n, cfg.clock.schedule);
    if (auto sinks = n.find("sinks")) {
        for (const ConfigNode& s : sinks->elements()) cfg.clock.sinks.push_back(read_sink(s, ext));
    }
}

void read_clock(const ConfigNode& n, const ScenarioExtensions& ext, ScenarioConfig& cfg)
{
    read_map(n, {"enabled", "rate", "period", "sinks"}, [&] { read_clock_keys(n, ext, cfg); });
}

void read_pacer_keys(const ConfigNode& n, ScenarioConfig& cfg)
{
    if (auto v = n.find("enabled")) cfg.pacer.enabled = v->as_bool();
    if (auto v = n.find("period")) cfg.pacer.period = positive_duration(*v, "a period");
    if (auto v = n.find("catch_up")) {
        const std::string policy = v->as_choice({"none", "bounded", "full"});
        cfg.pacer.catch_up = parse_catch_up(policy);
    }
    // as_duration refuses negative durations: both are >= 0.
    if (auto v = n.find("catch_up_limit")) cfg.pacer.catch_up_limit = v->as_duration();
    if (auto v = n.find("spin_tail")) cfg.pacer.spin_tail = v->as_duration();
}

void read_pacer(const ConfigNode& n, ScenarioConfig& cfg)
{
    read_map(n, {"enabled", "period", "catch_up", "catch_up_limit", "spin_tail"},
             [&] { read_pacer_keys(n, cfg); });
}

TimerConfig read_timer_keys(const ConfigNode& n)
{
    TimerConfig t;
    t.name = n.at("name").as_string();
    if (t.name.empty()) n.at("name").fail("expected a non-empty name");
    if (auto v = n.find("clock")) {
        t.clock = v->as_choice({"real", "simulated"}) == "real" ? TimerClock::real : TimerClock::simulated;
    }
    t.period = positive_duration(n.at("period"), "a period");
    if (auto v = n.find("offset")) t.offset = v->as_duration();
    if (t.clock == TimerClock::real && t.offset >= t.period) {
        n.at("offset").fail("a real-time timer needs offset < period (" + format_seconds(t.period) + " s)");
    }
    if (auto v = n.find("wait_for_start")) t.wait_for_start = v->as_bool();
    return t;
}

TimerConfig read_timer(const ConfigNode& n)
{
    TimerConfig value;
    read_map(n, {"name", "clock", "period", "offset", "wait_for_start"}, [&] { value = read_timer_keys(n); });
    return value;
}

// Accessor names, simulated timers and the clock publisher's and pacer's
// accessors all share the handler's one namespace of accessor names.
void check_names(const ConfigNode& root, const ScenarioConfig& cfg)
{
    std::map<std::string, std::string, std::less<>> taken; // name -> who
    if (cfg.clock.enabled) taken.emplace(ClockPublisherConfig{}.name, "the clock publisher (clock.enabled)");
    if (cfg.pacer.enabled) taken.emplace(PacerConfig{}.name, "the pacer (pacer.enabled)");
    auto claim = [&](const std::string& name, const std::string& who, const ConfigNode& at) {
        const auto [it, fresh] = taken.emplace(name, who);
        if (!fresh) at.fail("duplicate accessor name '" + name + "': taken by " + it->second);
    };
    if (auto list = root.find("accessors")) {
        const std::vector<ConfigNode> nodes = list->elements();
        for (std::size_t i = 0; i < cfg.accessors.size(); ++i) {
            claim(cfg.accessors[i].name, "accessors[" + std::to_string(i) + "]", nodes[i].at("name"));
        }
    }
    if (auto list = root.find("timers")) {
        const std::vector<ConfigNode> nodes = list->elements();
        std::set<std::string, std::less<>> timer_names;
        for (std::size_t i = 0; i < cfg.timers.size(); ++i) {
            const TimerConfig& t = cfg.timers[i];
            if (!timer_names.insert(t.name).second) nodes[i].at("name").fail("duplicate timer name '" + t.name + "'");
            // A simulated timer registers an accessor of its name.
            if (t.clock == TimerClock::simulated) {
                claim(t.name, "timers[" + std::to_string(i) + "] (a simulated timer is an accessor)", nodes[i].at("name"));
            }
        }
    }
}

} // namespace

UdpSinkConfig parse_udp_sink(const std::string& host_port)
{
    const auto colon = host_port.rfind(':');
    const std::string port_text = colon == std::string::npos ? std::string() : host_port.substr(colon + 1);
    std::string host = colon == std::string::npos ? std::string() : host_port.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    std::uint32_t port = 0;
    const bool digits = all_digits(port_text) && port_text.size() <= 5;
    if (digits) std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    const bool host_ok = !host.empty() && std::none_of(host.begin(), host.end(), [](char c) {
        return c == ' ' || c == '\t' || c == '[' || c == ']' || static_cast<unsigned char>(c) < 0x20;
    });
    if (!host_ok || !digits || port < 1 || port > 65535) {
        throw Error(errc::invalid_argument, "expected host:port with a port in 1..65535, got '" + host_port + "'");
    }
    return {host, static_cast<std::uint16_t>(port)};
}

ScenarioConfig load_scenario(const ConfigNode& root, const ScenarioExtensions& extensions)
{
    check_extensions(extensions);
    ScenarioConfig cfg;
    if (root.is_null()) return cfg; // an empty file is a valid, empty scenario
    if (!root.is_map()) root.fail("expected a map of sections (handler, time, world, ...)");
    // Document order, so the first error in the file is the one reported.
    for (const std::string& key : root.keys()) {
        if (!is_core_section(key)) {
            const auto registered = extensions.sections.find(key);
            if (registered == extensions.sections.end()) {
                std::vector<std::string> names(kCoreSections.begin(), kCoreSections.end());
                for (const auto& s : extensions.sections) names.push_back(s.first);
                root.fail_key(key, "unknown key; expected one of: " + join_names(names));
            }
            const ConfigNode section = ConfigNodeAccess::member(root, key);
            validate_with(registered->second, section);
            cfg.sections.emplace(key, section);
            continue;
        }
        const std::optional<ConfigNode> n = root.find(key);
        if (!n) continue; // `key:` with nothing: the defaults
        if (key == "handler") read_handler(*n, cfg);
        else if (key == "time") read_time(*n, extensions, cfg);
        else if (key == "world") read_world(*n, extensions, cfg);
        else if (key == "accessors") {
            for (const ConfigNode& a : n->elements()) cfg.accessors.push_back(read_accessor(a));
        } else if (key == "clock") read_clock(*n, extensions, cfg);
        else if (key == "pacer") read_pacer(*n, cfg);
        else if (key == "timers") {
            for (const ConfigNode& t : n->elements()) cfg.timers.push_back(read_timer(t));
        }
    }
    check_names(root, cfg);
    return cfg;
}

ScenarioConfig load_scenario_file(const std::string& path, const ScenarioExtensions& extensions)
{
    return load_scenario(ConfigNode::load_file(path), extensions);
}

ScenarioConfig load_scenario_string(const std::string& text, const std::string& name,
                                    const ScenarioExtensions& extensions)
{
    return load_scenario(ConfigNode::parse(text, name), extensions);
}

} // namespace simsync
