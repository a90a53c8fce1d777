include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

include(MagmadnnLayers)
set(_magmadnn_libraries "")
foreach(_layer IN LISTS MAGMADNN_LAYERS)
  if(TARGET ${MAGMADNN_LAYER_TARGET_${_layer}})  # an optional layer (onnx) may be off
    list(APPEND _magmadnn_libraries ${MAGMADNN_LAYER_TARGET_${_layer}})
  endif()
endforeach()
list(APPEND _magmadnn_libraries ${MAGMADNN_MODULES})  # loaded at run time from beside magmadnn_core
install(TARGETS ${_magmadnn_libraries} EXPORT magmadnnTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# Public headers keep their folder layout under include/magmadnn/; the umbrella
# header magmadnn.h sits at include/ so that <magmadnn.h> works.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/magmadnn/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/magmadnn
  FILES_MATCHING PATTERN "*.h" PATTERN "cuda" EXCLUDE PATTERN "cpu" EXCLUDE PATTERN "config.h.in" EXCLUDE)
install(FILES ${PROJECT_SOURCE_DIR}/include/magmadnn.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_BINARY_DIR}/generated/magmadnn/core/config.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/magmadnn/core)

install(EXPORT magmadnnTargets NAMESPACE magmadnn::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/magmadnn)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/magmadnnConfig.cmake.in
  ${PROJECT_BINARY_DIR}/magmadnnConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/magmadnn)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/magmadnnConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/magmadnnConfig.cmake ${PROJECT_BINARY_DIR}/magmadnnConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/magmadnn)
