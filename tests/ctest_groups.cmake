# Registers ember_tests' gtests with ctest, in groups: one ctest test per gtest suite (named as
# the suite, e.g. TensorTest), except the op table, whose cases are one ctest test per family file
# and backend: OpTable/<family>/<backend> (e.g. OpTable/conv/cpu runs OpTable.*/cpu of
# tests/op_table_conv.cpp), and the ONNX conformance suites and real models, one per device:
# OnnxConformance/<backend>, OnnxRealModels/<backend>. One process per gtest costs ~7x the single process's time (the
# Vulkan tests each open the device and compile their kernels again), one per group about what
# the single process takes, and ctest still runs the groups in parallel and reports each.
#
# Included by ctest (TEST_INCLUDE_FILES, set in tests/CMakeLists.txt) with EMBER_TEST_EXE (the
# ember_tests binary) and EMBER_TEST_DIR (its folder, where the tests run). Lists the gtests
# (--gtest_list_tests, with file names in JSON) when the binary is newer than the last list.
set(groups_file "${EMBER_TEST_DIR}/ember_tests_groups.cmake")
if(NOT EXISTS "${EMBER_TEST_EXE}")
  # Not built: a test that fails, naming what is missing.
  add_test(ember_tests_NOT_BUILT "${EMBER_TEST_EXE}")
  return()
endif()

if(NOT EXISTS "${groups_file}" OR "${EMBER_TEST_EXE}" IS_NEWER_THAN "${groups_file}" OR
   "${CMAKE_CURRENT_LIST_FILE}" IS_NEWER_THAN "${groups_file}")
  set(json "${groups_file}.json")
  file(REMOVE "${json}")
  execute_process(COMMAND "${EMBER_TEST_EXE}" --gtest_list_tests "--gtest_output=json:${json}"
                  WORKING_DIRECTORY "${EMBER_TEST_DIR}" RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE out TIMEOUT 120)
  if(NOT rc EQUAL 0 OR NOT EXISTS "${json}")
    file(REMOVE "${groups_file}")
    message(FATAL_ERROR "${EMBER_TEST_EXE} --gtest_list_tests failed (${rc}):\n${out}")
  endif()
  file(READ "${json}" text)
  string(REPLACE "\\/" "/" text "${text}")
  # A value-parameterized test's "value_param" stands between its "name" and "file".
  string(REGEX REPLACE "\"value_param\": [^\n]*\n[ ]*" "" text "${text}")
  # gtest writes a suite as "name" then "tests", a test as "name" then "file" (its source).
  string(REGEX MATCHALL "\"name\": \"[^\"]*\",[ \n]*\"(tests|file)\": \"?[^\",\n]*" items
         "${text}")
  set(order "")
  set(count 0)
  foreach(item IN LISTS items)
    string(REGEX MATCH "\"name\": \"([^\"]*)\",[ \n]*\"(tests|file)\": \"?([^\",\n]*)" m "${item}")
    set(name "${CMAKE_MATCH_1}")
    set(file "${CMAKE_MATCH_3}")
    if(CMAKE_MATCH_2 STREQUAL "tests")
      set(suite "${name}")
      continue()
    endif()
    math(EXPR count "${count} + 1")
    set(per_test OFF)
    if(suite STREQUAL "OpTable" AND name MATCHES "/([A-Za-z0-9_]+)$")
      set(backend "${CMAKE_MATCH_1}")
      get_filename_component(family "${file}" NAME_WE)
      string(REGEX REPLACE "^op_table_" "" family "${family}")
      set(group "OpTable/${family}/${backend}")
      set(per_test ON)
    elseif(suite MATCHES "(OnnxConformance|OnnxRealModels)$" AND
           name MATCHES "_(ref|cpu|vulkan|opencl)$")
      set(backend "${CMAKE_MATCH_1}")
      string(REGEX REPLACE ".*/" "" short "${suite}")
      set(group "${short}/${backend}")  # one per device, run in parallel
      set(per_test ON)
    else()
      set(group "${suite}")
    endif()
    string(MAKE_C_IDENTIFIER "${group}" id)
    if(NOT DEFINED "tests_${id}")
      list(APPEND order "${group}")
      set("tests_${id}" "")
    endif()
    if(NOT per_test)
      set("tests_${id}" "${suite}.*")
    else()
      string(APPEND "tests_${id}" ":${suite}.${name}")
    endif()
  endforeach()
  if(count EQUAL 0)
    file(REMOVE "${groups_file}")
    message(FATAL_ERROR "${EMBER_TEST_EXE} lists no tests")
  endif()
  set(script "# ${count} gtests of ${EMBER_TEST_EXE}, listed by tests/ctest_groups.cmake\n")
  foreach(group IN LISTS order)
    string(MAKE_C_IDENTIFIER "${group}" id)
    string(REGEX REPLACE "^:" "" filter "${tests_${id}}")
    # A filter that matches nothing passes in gtest: "Running 0 tests" fails the ctest test.
    string(APPEND script
           "add_test([==[${group}]==] [==[${EMBER_TEST_EXE}]==] [==[--gtest_filter=${filter}]==])\n"
           "set_tests_properties([==[${group}]==] PROPERTIES WORKING_DIRECTORY "
           "[==[${EMBER_TEST_DIR}]==] FAIL_REGULAR_EXPRESSION [==[Running 0 tests from]==])\n")
    # The op table runs twice on devices that fuse: as the user gets it (lazy, fused) and
    # eagerly (EMBER_FUSION=0).
    if(group MATCHES "^OpTable/" AND NOT group MATCHES "/ref$")  # ref never records
      string(APPEND script
             "add_test([==[${group}/eager]==] [==[${EMBER_TEST_EXE}]==] "
             "[==[--gtest_filter=${filter}]==])\n"
             "set_tests_properties([==[${group}/eager]==] PROPERTIES WORKING_DIRECTORY "
             "[==[${EMBER_TEST_DIR}]==] ENVIRONMENT EMBER_FUSION=0 FAIL_REGULAR_EXPRESSION "
             "[==[Running 0 tests from]==])\n")
    endif()
    # The fusion tests run again with EMBER_CHECK=1: each fused graph (and each matmul with its
    # epilogue) also runs op by op.
    if(group MATCHES "^(StreamTest|StreamFaultTest|OptimFusionTest|CpuFusedGraph.*|GpuFusedGraph.*|EpilogueTest|GpuEpilogueTest|ConvEpilogueTest|EpilogueNonFiniteTest|FusedReduceTest)$")
      string(APPEND script
             "add_test([==[${group}/check]==] [==[${EMBER_TEST_EXE}]==] "
             "[==[--gtest_filter=${filter}]==])\n"
             "set_tests_properties([==[${group}/check]==] PROPERTIES WORKING_DIRECTORY "
             "[==[${EMBER_TEST_DIR}]==] ENVIRONMENT EMBER_CHECK=1 FAIL_REGULAR_EXPRESSION "
             "[==[Running 0 tests from]==])\n")
    endif()
  endforeach()
  file(WRITE "${groups_file}" "${script}")
endif()
include("${groups_file}")
