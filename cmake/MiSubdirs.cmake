# mi_add_subdirectories(): adds every folder of the current source folder that has a
# CMakeLists.txt, in name order; what plugins/, tools/ and tools/bench/ are made of, so a new
# plugin, program or benchmark needs no edit of its parent.
function(mi_add_subdirectories)
  file(GLOB _dirs LIST_DIRECTORIES true ${CMAKE_CURRENT_SOURCE_DIR}/*)
  list(SORT _dirs)
  foreach(d ${_dirs})
    if(IS_DIRECTORY ${d} AND EXISTS ${d}/CMakeLists.txt)
      add_subdirectory(${d})
    endif()
  endforeach()
endfunction()
