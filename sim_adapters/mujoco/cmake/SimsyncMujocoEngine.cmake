# simsync_mujoco_find_engine(<found-var>)
#
# Finds MuJoCo's CMake package (mujoco::mujoco) and makes it usable. Debian's
# libmujoco-dev 2.2.2 lists /usr/include/libqhull_r/ among the target's include
# directories (a path of MuJoCo's own build, needed by no public header) without
# depending on libqhull-dev; CMake refuses a target that names a missing
# directory. Such directories are dropped from the target, with a message.
# Shared by the adapter's build and the installed package
# (simsync_mujocoTargets.cmake). Sets <found-var> TRUE or FALSE.
function(simsync_mujoco_find_engine found_var)
  find_package(mujoco CONFIG QUIET)
  if(NOT mujoco_FOUND OR NOT TARGET mujoco::mujoco)
    set(${found_var} FALSE PARENT_SCOPE)
    return()
  endif()
  get_target_property(_includes mujoco::mujoco INTERFACE_INCLUDE_DIRECTORIES)
  if(_includes)
    set(_kept "")
    foreach(_dir IN LISTS _includes)
      if(EXISTS "${_dir}")
        list(APPEND _kept "${_dir}")
      else()
        message(STATUS "simsync: dropping the missing include directory ${_dir} from mujoco::mujoco "
                       "(named by MuJoCo's CMake package, used by none of its headers)")
      endif()
    endforeach()
    set_target_properties(mujoco::mujoco PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_kept}")
  endif()
  set(${found_var} TRUE PARENT_SCOPE)
  set(mujoco_VERSION "${mujoco_VERSION}" PARENT_SCOPE)
endfunction()
