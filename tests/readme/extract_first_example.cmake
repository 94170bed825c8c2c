# Makes a program of the README's first C++ block, so the block a newcomer
# copies first is compiled and run by the test suite (Docs.Readme.FirstExample).
#
# cmake -DREADME=README.md -DOUTPUT=readme_first_example.cpp -P extract_first_example.cmake
#
# The block's #include lines go to the top, the rest into main(), after a stub
# of the one function it leaves to the reader (render). After the block, main
# checks what the block promises about an accessor's end: time moves on without
# it (a lockstep accessor that is done and still registered would hold time at
# its last bound forever, and the request below would time out).
file(READ "${README}" text)
string(FIND "${text}" "```cpp\n" start)
if(start EQUAL -1)
  message(FATAL_ERROR "${README}: no ```cpp block")
endif()
math(EXPR start "${start} + 7")
string(SUBSTRING "${text}" ${start} -1 rest)
string(FIND "${rest}" "```" end)
string(SUBSTRING "${rest}" 0 ${end} block)

string(REPLACE ";" "\\;" block "${block}")
string(REPLACE "\n" ";" lines "${block}")
set(includes "")
set(body "")
foreach(line IN LISTS lines)
  if(line MATCHES "^#include")
    string(APPEND includes "${line}\n")
  else()
    string(APPEND body "    ${line}\n")
  endif()
endforeach()

file(WRITE "${OUTPUT}.tmp" "// Generated from ${README}'s first C++ block by tests/readme/extract_first_example.cmake.
${includes}
#include <cstdio>

namespace {
template <class World>
void render(const World&) {} // the README leaves drawing to the reader
} // namespace

int main()
{
${body}
    // What the block promises: once it is done, time moves on without it.
    using namespace std::chrono_literals;
    auto after = handler.register_accessor(\"after_the_readme\", {.kind = simsync::AccessorKind::free});
    const simsync::SimTime later = handler.now() + 1s;
    if (!after.request_access_for(later, 10s)) {
        std::fprintf(stderr, \"time stands at %s s after the README's block: an accessor of it still holds it\\n\",
                     simsync::format_seconds(handler.now()).c_str());
        return 1;
    }
    std::printf(\"the README's first block ran; time moved on to %s s after it\\n\", simsync::format_seconds(later).c_str());
    return 0;
}
")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
