# The mujoco component of find_package(simsync COMPONENTS mujoco): finds MuJoCo
# (it is not ours to install), then defines simsync::mujoco. Included by
# simsyncConfig.cmake.
include("${CMAKE_CURRENT_LIST_DIR}/SimsyncMujocoEngine.cmake")
simsync_mujoco_find_engine(_simsync_mujoco_engine_found)
if(NOT _simsync_mujoco_engine_found)
  set(simsync_mujoco_FOUND FALSE)
  set(simsync_NOT_FOUND_MESSAGE "simsync's mujoco component needs MuJoCo (libmujoco-dev), which was not found")
  return()
endif()
include("${CMAKE_CURRENT_LIST_DIR}/simsync_mujocoExport.cmake")
