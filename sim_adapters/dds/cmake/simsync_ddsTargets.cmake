# The dds component of find_package(simsync COMPONENTS dds): finds Cyclone DDS,
# which the static simsync::dds links, then defines simsync::dds. Included by
# simsyncConfig.cmake.
include(CMakeFindDependencyMacro)
find_package(CycloneDDS 0.10 CONFIG QUIET)
if(NOT CycloneDDS_FOUND)
  set(simsync_dds_FOUND FALSE)
  set(simsync_NOT_FOUND_MESSAGE "simsync's dds component needs Cyclone DDS (cyclonedds-dev), which was not found")
  return()
endif()
include("${CMAKE_CURRENT_LIST_DIR}/simsync_ddsExport.cmake")
