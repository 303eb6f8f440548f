# mi_add_plugin(<target> NAME <plugin-name> SOURCES ...): a MODULE library built against the SDK
# alone, with hidden visibility, written with its manifest into ${MI_PLUGIN_OUTPUT_DIR}.
# Plugins written to the default folder are the product's and are installed, with their
# manifests, into ${MI_INSTALL_PLUGINDIR}; test plugins name their own OUTPUT_DIR and are not.
function(mi_add_plugin target)
  cmake_parse_arguments(P "" "NAME;OUTPUT_DIR" "SOURCES" ${ARGN})
  set(_install OFF)
  if(NOT P_OUTPUT_DIR)
    set(P_OUTPUT_DIR ${MI_PLUGIN_OUTPUT_DIR})
    set(_install ON)
  endif()
  add_library(${target} MODULE ${P_SOURCES})
  target_link_libraries(${target} PRIVATE metainfer_sdk_helpers)
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${P_OUTPUT_DIR})
  target_link_options(${target} PRIVATE -Wl,--no-undefined)
  set(MI_MANIFEST_NAME ${P_NAME})
  set(MI_MANIFEST_LIBRARY lib${target}.so)
  file(WRITE ${P_OUTPUT_DIR}/${P_NAME}.mi-plugin
    "# Meta Infer plugin manifest\nname: ${P_NAME}\nlibrary: lib${target}.so\nabi_major: 1\n")
  if(_install)
    install(TARGETS ${target} LIBRARY DESTINATION ${MI_INSTALL_PLUGINDIR} COMPONENT plugins)
    install(FILES ${P_OUTPUT_DIR}/${P_NAME}.mi-plugin DESTINATION ${MI_INSTALL_PLUGINDIR}
            COMPONENT plugins)
  endif()
endfunction()
