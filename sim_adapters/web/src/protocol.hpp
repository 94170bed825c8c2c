#pragma once
// The console's incoming messages: one JSON object per WebSocket text message,
//   {"type": "command", "id": <integer, optional>, "text": "<command line>"}
// Anything else is malformed and closes the connection (see console.hpp).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace simsync::web::detail {

struct IncomingCommand {
    std::optional<std::int64_t> id;
    std::string text;
};

// Longest command line accepted inside a message.
inline constexpr std::size_t kMaxCommandText = 256;

// Parses one message. Returns the command, or sets `error` to why the message is
// malformed (a short sentence for the close reason) and returns nullopt.
std::optional<IncomingCommand> parse_incoming(std::string_view message, std::string& error);

} // namespace simsync::web::detail
