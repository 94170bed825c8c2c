cmake_minimum_required(VERSION 3.25)
# Every Markdown file the repository's sources and docs name exists in it, so a
# comment that sends a reader to a page can be followed
# (Docs.References.CitedMarkdownFilesExist).
#
# cmake -DSOURCE_DIR=<repository> -P check_cited_files.cmake
#
# A name counts as cited when it ends in ".md" and is made of letters, digits,
# '_', '-', '.' and '/'; it exists when a file of that name (its last path
# part) is somewhere in the repository. Build trees and node_modules are skipped.
file(GLOB_RECURSE all_files LIST_DIRECTORIES false RELATIVE "${SOURCE_DIR}" "${SOURCE_DIR}/*")
list(FILTER all_files EXCLUDE REGEX "^(build|\\.git)/|/node_modules/|/build/")
set(markdown_names "")
foreach(f IN LISTS all_files)
  if(f MATCHES "\\.md$")
    get_filename_component(name "${f}" NAME)
    list(APPEND markdown_names "${name}")
  endif()
endforeach()
set(missing "")
foreach(f IN LISTS all_files)
  if(NOT f MATCHES "\\.(cpp|hpp|h|c|md|txt|cmake|sh|py|yaml|yml|in|json|js|html)$|(^|/)(run|setup-deps|bench|fuzz|check-[a-z-]+)$")
    continue()
  endif()
  file(STRINGS "${SOURCE_DIR}/${f}" lines REGEX "[A-Za-z0-9_/-]\\.md")
  foreach(line IN LISTS lines)
    string(REGEX MATCHALL "[A-Za-z0-9_./-]*[A-Za-z0-9_-]\\.md" cited "${line}")
    foreach(c IN LISTS cited)
      get_filename_component(name "${c}" NAME)
      if(name MATCHES "^\\." OR name IN_LIST markdown_names)
        continue()
      endif()
      list(APPEND missing "${f}: ${c}")
    endforeach()
  endforeach()
endforeach()
if(missing)
  list(REMOVE_DUPLICATES missing)
  list(JOIN missing "\n  " text)
  message(FATAL_ERROR "Markdown files cited but not in the repository:\n  ${text}")
endif()
message(STATUS "every cited Markdown file exists")
