# The web component of find_package(simsync COMPONENTS web): the Boost headers
# the static library was compiled with (linked privately, named in its link
# interface), OpenSSL, then simsync::web. Included by simsyncConfig.cmake.
include(CMakeFindDependencyMacro)
find_package(Boost 1.81 QUIET)
if(NOT Boost_FOUND)
  set(simsync_web_FOUND FALSE)
  set(simsync_NOT_FOUND_MESSAGE "simsync's web component needs the Boost >= 1.81 headers, which were not found")
  return()
endif()
# TLS: the static library links OpenSSL.
find_package(OpenSSL QUIET)
if(NOT OpenSSL_FOUND)
  set(simsync_web_FOUND FALSE)
  set(simsync_NOT_FOUND_MESSAGE "simsync's web component needs OpenSSL (libssl-dev), which was not found")
  return()
endif()
include("${CMAKE_CURRENT_LIST_DIR}/simsync_webExport.cmake")
