# Helpers of the Python package's CMakeLists.

# Without an explicit Python3_EXECUTABLE, prefer the first `python3` on PATH
# that can import numpy and pytest (Debian's python3-numpy, python3-pytest):
# a pyenv or virtualenv interpreter earlier on PATH often lacks them, and the
# module must be built for the interpreter that runs its tests.
function(simsync_python_choose_interpreter)
  if(DEFINED Python3_EXECUTABLE OR DEFINED CACHE{Python3_EXECUTABLE})
    return()
  endif()
  if(WIN32)
    return()
  endif()
  string(REPLACE ":" ";" _path "$ENV{PATH}")
  list(APPEND _path /usr/bin)
  foreach(_dir IN LISTS _path)
    if(EXISTS "${_dir}/python3")
      execute_process(COMMAND "${_dir}/python3" -c "import numpy, pytest"
                      RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
      if(_rc EQUAL 0)
        set(Python3_EXECUTABLE "${_dir}/python3" CACHE FILEPATH "The Python interpreter of the simsync package")
        return()
      endif()
    endif()
  endforeach()
endfunction()

# The site directory relative to the install prefix, as the interpreter's own
# install scheme lays it out (Debian: lib/python3.X/dist-packages under
# /usr/local, which its python3 searches; elsewhere lib/python3.X/site-packages).
function(simsync_python_install_dir out)
  execute_process(COMMAND "${Python3_EXECUTABLE}" -c [=[
import sysconfig
scheme = sysconfig.get_default_scheme() if hasattr(sysconfig, "get_default_scheme") else "posix_prefix"
path = sysconfig.get_path("platlib", scheme, vars={"platbase": "@", "base": "@"})
path = path[2:]
if scheme == "posix_local" and path.startswith("local/"):
    path = path[len("local/"):]
print(path, end="")
]=] OUTPUT_VARIABLE _dir RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0 OR _dir STREQUAL "")
    set(_dir "lib/python${Python3_VERSION_MAJOR}.${Python3_VERSION_MINOR}/site-packages")
  endif()
  set(${out} "${_dir}" PARENT_SCOPE)
endfunction()
