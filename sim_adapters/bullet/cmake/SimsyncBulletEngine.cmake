# simsync_bullet_find_engine(<float64 ON|OFF> <found-var>)
#
# Finds Bullet and wraps what it reports in one imported interface target,
# simsync_bullet_engine (SYSTEM include directories, the three libraries a
# rigid-body world needs, and the BT_USE_DOUBLE_PRECISION definition when the
# float64 build is used). Shared by the adapter's own build and by the installed
# package (simsync_bulletTargets.cmake), so a consumer links exactly the Bullet
# build the adapter was compiled against. Sets <found-var> TRUE or FALSE; on
# success also SIMSYNC_BULLET_PRECISION (float|double), SIMSYNC_BULLET_MODE
# (config|module) and SIMSYNC_BULLET_VERSION in the caller's scope.
#
# Debian's libbullet-dev ships BulletConfig.cmake (btScalar = float) and
# BulletConfig-float64.cmake (double, libraries with a -float64 suffix); headers
# and libraries must agree on BT_USE_DOUBLE_PRECISION, so it travels with the target.
function(simsync_bullet_find_engine float64 found_var)
  if(TARGET simsync_bullet_engine)
    set(${found_var} TRUE PARENT_SCOPE)
    return()
  endif()
  if(float64)
    find_package(Bullet CONFIG QUIET CONFIGS BulletConfig-float64.cmake)
  else()
    find_package(Bullet CONFIG QUIET)
  endif()
  set(_mode config)
  if(NOT Bullet_FOUND AND NOT BULLET_FOUND)
    find_package(Bullet MODULE QUIET)
    set(_mode module)
  endif()
  if(NOT Bullet_FOUND AND NOT BULLET_FOUND)
    set(${found_var} FALSE PARENT_SCOPE)
    return()
  endif()

  # Bullet's config file gives paths relative to BULLET_ROOT_DIR and no imported targets.
  set(_includes "")
  foreach(_dir IN LISTS BULLET_INCLUDE_DIRS)
    if(NOT IS_ABSOLUTE "${_dir}" AND DEFINED BULLET_ROOT_DIR)
      set(_dir "${BULLET_ROOT_DIR}/${_dir}")
    endif()
    list(APPEND _includes "${_dir}")
  endforeach()

  set(_libraries "")
  if(_mode STREQUAL "config")
    set(_libdirs "")
    foreach(_dir IN LISTS BULLET_LIBRARY_DIRS)
      if(NOT IS_ABSOLUTE "${_dir}" AND DEFINED BULLET_ROOT_DIR)
        set(_dir "${BULLET_ROOT_DIR}/${_dir}")
      endif()
      list(APPEND _libdirs "${_dir}")
    endforeach()
    # Only the three libraries a rigid-body world needs, in link order.
    foreach(_lib IN LISTS BULLET_LIBRARIES)
      if(_lib MATCHES "^(BulletDynamics|BulletCollision|LinearMath)(-float64)?$")
        find_library(_simsync_bullet_${_lib} NAMES ${_lib} HINTS ${_libdirs})
        if(NOT _simsync_bullet_${_lib})
          message(STATUS "simsync: Bullet library ${_lib} not found")
          set(${found_var} FALSE PARENT_SCOPE)
          return()
        endif()
        list(APPEND _libraries "${_simsync_bullet_${_lib}}")
      endif()
    endforeach()
    list(SORT _libraries COMPARE STRING ORDER DESCENDING) # Dynamics, Collision, LinearMath
  else()
    set(_libraries ${BULLET_LIBRARIES})
  endif()

  set(_definitions "")
  foreach(_def IN LISTS BULLET_DEFINITIONS)
    string(REGEX REPLACE "^-D" "" _def "${_def}")
    if(_def)
      list(APPEND _definitions "${_def}")
    endif()
  endforeach()
  if(_libraries MATCHES "-float64" AND NOT "BT_USE_DOUBLE_PRECISION" IN_LIST _definitions)
    list(APPEND _definitions BT_USE_DOUBLE_PRECISION)
  endif()

  add_library(simsync_bullet_engine INTERFACE IMPORTED)
  set_target_properties(simsync_bullet_engine PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${_includes}"
    INTERFACE_LINK_LIBRARIES "${_libraries}"
    INTERFACE_COMPILE_DEFINITIONS "${_definitions}")

  if("BT_USE_DOUBLE_PRECISION" IN_LIST _definitions)
    set(SIMSYNC_BULLET_PRECISION double PARENT_SCOPE)
  else()
    set(SIMSYNC_BULLET_PRECISION float PARENT_SCOPE)
  endif()
  set(SIMSYNC_BULLET_MODE ${_mode} PARENT_SCOPE)
  set(SIMSYNC_BULLET_VERSION "${BULLET_VERSION_STRING}" PARENT_SCOPE)
  set(${found_var} TRUE PARENT_SCOPE)
endfunction()
