#pragma once
// A small JSON writer for the console's outgoing messages: compact output with
// numbers at the precision the page needs (Boost.JSON would print every double
// with 17 digits, tripling the size of a frame of 100 bodies).

#include <cstdint>
#include <string>
#include <string_view>

namespace simsync::web::detail {

// Appends JSON text to a string. The caller writes a well-formed sequence
// (keys inside objects, commas are automatic).
// Copy/move: both. Thread safety: distinct objects: safe; shared: unsafe.
class JsonWriter {
public:
    void begin_object();
    void end_object();
    void begin_array();
    void end_array();
    JsonWriter& key(std::string_view k);
    void string(std::string_view s);
    void number(double v, int significant = 6); // non-finite: null
    void fixed(double v, int decimals);         // non-finite: null
    void integer(std::int64_t v);
    void unsigned_integer(std::uint64_t v);
    void boolean(bool b);
    void null();
    // Appends already-encoded JSON as one value.
    void raw(std::string_view json);

    const std::string& str() const noexcept { return out_; }
    std::string take() { return std::move(out_); }
    void clear() { out_.clear(), first_ = true; }

private:
    void separator();
    std::string out_;
    bool first_ = true; // no comma before the next value
    bool after_key_ = false;
};

// `s` as a JSON string literal, quotes included. Invalid UTF-8 bytes become
// U+FFFD, so that the output is always valid JSON text.
std::string json_quote(std::string_view s);

} // namespace simsync::web::detail
