# ctest install_package (cmake -P; tests/CMakeLists.txt passes the variables): installs this build
# into a fresh prefix and checks what a user gets there:
#   - the files of cmake/Install.cmake, and RPATHs that point nowhere but $ORIGIN (no build tree);
#   - the installed CLI runs and says the project's version;
#   - tests/install/consumer, configured with the same compiler, finds the package, builds, links
#     libattnc.so alone (none of its internal dependencies) and runs (version, spec error, select);
#   - the version rule: find_package(attnc MAJOR.MINOR) works, a later minor or major does not.
# In: BUILD_DIR SOURCE_DIR WORK_DIR VERSION LIBDIR BINDIR INCLUDEDIR C_COMPILER GENERATOR READELF.

function(run_step name expect_ok)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  set(step_output "${out}" PARENT_SCOPE)
  if(expect_ok AND NOT rc EQUAL 0)
    message(FATAL_ERROR "${name} failed (${rc}):\n${out}")
  elseif(NOT expect_ok AND rc EQUAL 0)
    message(FATAL_ERROR "${name} should have failed:\n${out}")
  endif()
endfunction()

function(expect_contains name text part)
  string(FIND "${text}" "${part}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${name}: expected '${part}' in:\n${text}")
  endif()
endfunction()

# Every RPATH / RUNPATH entry of an installed file is $ORIGIN-relative.
function(expect_relocatable file)
  run_step("readelf -d ${file}" TRUE ${READELF} -d ${file})
  string(REGEX MATCHALL "R(UN)?PATH\\)[^\n]*\\[[^]\n]*\\]" paths "${step_output}")
  foreach(entry ${paths})
    string(REGEX REPLACE ".*\\[(.*)\\]" "\\1" list "${entry}")
    string(REPLACE ":" ";" list "${list}")
    foreach(dir ${list})
      if(NOT dir MATCHES "^\\$ORIGIN")
        message(FATAL_ERROR "${file}: RPATH entry '${dir}' is not relative to $ORIGIN:\n${step_output}")
      endif()
    endforeach()
  endforeach()
endfunction()

set(prefix ${WORK_DIR}/prefix)
set(consumer ${WORK_DIR}/consumer)
file(REMOVE_RECURSE ${WORK_DIR})
run_step("cmake --install" TRUE ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

set(pkg ${LIBDIR}/cmake/attnc)
foreach(f ${LIBDIR}/libattnc.so ${INCLUDEDIR}/attnc.h ${BINDIR}/attnc ${pkg}/attncConfig.cmake
          ${pkg}/attncConfigVersion.cmake ${pkg}/attncTargets.cmake)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "cmake --install did not put ${f} under the prefix")
  endif()
endforeach()
expect_relocatable(${prefix}/${LIBDIR}/libattnc.so)
expect_relocatable(${prefix}/${BINDIR}/attnc)

run_step("installed attnc --version" TRUE ${prefix}/${BINDIR}/attnc --version)
if(NOT step_output STREQUAL "attnc ${VERSION}\n")
  message(FATAL_ERROR "installed attnc --version: expected 'attnc ${VERSION}', got:\n${step_output}")
endif()

# The consumer, as a user's project: only the fresh prefix to search, no package registry.
set(configure ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install/consumer -B ${consumer} -G ${GENERATOR}
    -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
run_step("configure the consumer" TRUE ${configure})
expect_contains("the consumer's find_package" "${step_output}" "attnc ${VERSION} from ${prefix}/${pkg}")
run_step("build the consumer" TRUE ${CMAKE_COMMAND} --build ${consumer})
run_step("run the consumer" TRUE ${CMAKE_COMMAND} -E env ATTNC_CACHE_DIR=${WORK_DIR}/cache ${consumer}/app)
expect_contains("the consumer's output" "${step_output}" "attnc ${VERSION}: {")

# attnc::attnc links libattnc.so and nothing of what is inside it.
run_step("readelf -d app" TRUE ${READELF} -d ${consumer}/app)
expect_contains("the consumer's NEEDED" "${step_output}" "[libattnc.so]")
if(step_output MATCHES "yaml-cpp|sqlite|xxhash|nvrtc|stdc\\+\\+")
  message(FATAL_ERROR "the consumer links attnc's own dependencies (attnc::attnc should carry only libattnc.so):\n"
                      "${step_output}")
endif()

# The version rule (cmake/Install.cmake): the installed MAJOR.MINOR is accepted, later ones are not.
string(REPLACE "." ";" parts ${VERSION})
list(GET parts 0 major)
list(GET parts 1 minor)
math(EXPR next_major "${major} + 1")
math(EXPR next_minor "${minor} + 1")
run_step("find_package(attnc ${major}.${minor})" TRUE ${configure} -DATTNC_REQUEST=${major}.${minor})
foreach(later ${next_major}.0 ${major}.${next_minor})
  run_step("find_package(attnc ${later})" FALSE ${configure} -DATTNC_REQUEST=${later})
  expect_contains("find_package(attnc ${later})" "${step_output}" "requested version \"${later}\"")
endforeach()
message(STATUS "installed attnc ${VERSION} into ${prefix}; the consumer found, built and ran against it")
