# What `cmake --install <build> --prefix P` puts under P (GNU layout):
#   lib/libattnc.so                     the C API; in the portable build also libyaml-cpp.so.* beside it
#   include/attnc.h
#   bin/attnc                           the command line
#   lib/cmake/attnc/attncConfig.cmake   find_package(attnc [version]) -> the target attnc::attnc
# attnc::attnc carries the include dir and links libattnc.so alone: the static libraries inside it
# (attnc_runtime, ...) are linked privately and their symbols kept local, so a consumer never sees them.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(ATTNC_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/attnc)

if(ATTNC_PORTABLE)
  # libattnc.so takes the shared yaml-cpp (runtime/CMakeLists.txt) and finds it at $ORIGIN: install
  # it there, the file its DT_NEEDED names and the links to it, resolved when installing.
  set(attnc_yaml_cpp RUNTIME_DEPENDENCY_SET attnc_yaml_cpp)
endif()
install(TARGETS attnc_shared EXPORT attncTargets ${attnc_yaml_cpp}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(ATTNC_PORTABLE)
  install(RUNTIME_DEPENDENCY_SET attnc_yaml_cpp PRE_INCLUDE_REGEXES "^libyaml-cpp" PRE_EXCLUDE_REGEXES ".*"
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
install(FILES ${PROJECT_SOURCE_DIR}/include/attnc.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# The CLI links no library of this package (only the system's and libnvrtc), so it needs no RPATH;
# CMake drops the build tree's when installing.
install(TARGETS attnc RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

install(EXPORT attncTargets NAMESPACE attnc:: DESTINATION ${ATTNC_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/attncConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/attncConfig.cmake INSTALL_DESTINATION ${ATTNC_CMAKE_DIR})
# Before 1.0 a minor release may break the C API, so 0.x asks for the same minor; from 1.0 on, the
# same major.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(attnc_compatibility SameMinorVersion)
else()
  set(attnc_compatibility SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/attncConfigVersion.cmake
                                 COMPATIBILITY ${attnc_compatibility})
install(FILES ${PROJECT_BINARY_DIR}/attncConfig.cmake ${PROJECT_BINARY_DIR}/attncConfigVersion.cmake
        DESTINATION ${ATTNC_CMAKE_DIR})

# A wheel (pip install .; pyproject.toml): scikit-build-core installs into the package folder
# attnc/ (lib/libattnc.so, bin/attnc, include/attnc.h, lib/cmake/attnc/), and the package learns
# which NVRTC the build links from _build_config.py beside its modules.
if(SKBUILD)
  if(ATTNC_PORTABLE)
    set(ATTNC_PORTABLE_PY True)
  else()
    set(ATTNC_PORTABLE_PY False)
  endif()
  configure_file(${PROJECT_SOURCE_DIR}/cmake/_build_config.py.in ${PROJECT_BINARY_DIR}/python/_build_config.py @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/python/_build_config.py DESTINATION .)
endif()
