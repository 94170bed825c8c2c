#include "json_writer.hpp"

#include <cmath>
#include <cstdio>

namespace simsync::web::detail {

namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 if it is not one.
std::size_t utf8_sequence(std::string_view s, std::size_t i)
{
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = b(i);
    auto cont = [&](std::size_t k) { return k < s.size() && (b(k) & 0xC0) == 0x80; };
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return cont(i + 1) ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (!cont(i + 1) || !cont(i + 2)) return 0;
        if (c == 0xE0 && b(i + 1) < 0xA0) return 0; // overlong
        if (c == 0xED && b(i + 1) >= 0xA0) return 0; // surrogates
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (!cont(i + 1) || !cont(i + 2) || !cont(i + 3)) return 0;
        if (c == 0xF0 && b(i + 1) < 0x90) return 0; // overlong
        if (c == 0xF4 && b(i + 1) >= 0x90) return 0; // beyond U+10FFFF
        return 4;
    }
    return 0;
}

} // namespace

std::string json_quote(std::string_view s)
{
    std::string out;
    out.reserve(s.size() + 2);
    out += '"';
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        const std::size_t n = utf8_sequence(s, i);
        if (n == 0) {
            out += "\xEF\xBF\xBD"; // U+FFFD for a byte that is not UTF-8
            ++i;
            continue;
        }
        if (n > 1) {
            out.append(s.substr(i, n));
            i += n;
            continue;
        }
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
            if (c < 0x20 || c == 0x7f) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", c);
                out += buf;
            } else {
                out += static_cast<char>(c);
            }
        }
        ++i;
    }
    out += '"';
    return out;
}

void JsonWriter::separator()
{
    if (after_key_) {
        after_key_ = false;
        return;
    }
    if (!first_) out_ += ',';
    first_ = false;
}

void JsonWriter::begin_object()
{
    separator();
    out_ += '{';
    first_ = true;
}

void JsonWriter::end_object()
{
    out_ += '}';
    first_ = false;
}

void JsonWriter::begin_array()
{
    separator();
    out_ += '[';
    first_ = true;
}

void JsonWriter::end_array()
{
    out_ += ']';
    first_ = false;
}

JsonWriter& JsonWriter::key(std::string_view k)
{
    separator();
    out_ += json_quote(k);
    out_ += ':';
    after_key_ = true;
    return *this;
}

void JsonWriter::string(std::string_view s)
{
    separator();
    out_ += json_quote(s);
}

void JsonWriter::number(double v, int significant)
{
    separator();
    if (!std::isfinite(v)) {
        out_ += "null";
        return;
    }
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.*g", significant, v);
    out_ += buf;
}

void JsonWriter::fixed(double v, int decimals)
{
    separator();
    if (!std::isfinite(v)) {
        out_ += "null";
        return;
    }
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    // "-0.000" is valid JSON, but "0.000" reads better on the page.
    std::string_view text = buf;
    if (text.size() > 1 && text[0] == '-' && text.find_first_not_of("-0.") == std::string_view::npos) {
        text.remove_prefix(1);
    }
    out_ += text;
}

void JsonWriter::integer(std::int64_t v)
{
    separator();
    out_ += std::to_string(v);
}

void JsonWriter::unsigned_integer(std::uint64_t v)
{
    separator();
    out_ += std::to_string(v);
}

void JsonWriter::boolean(bool b)
{
    separator();
    out_ += b ? "true" : "false";
}

void JsonWriter::null()
{
    separator();
    out_ += "null";
}

void JsonWriter::raw(std::string_view json)
{
    separator();
    out_ += json;
}

} // namespace simsync::web::detail
