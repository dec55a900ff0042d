# The browser tests in the native build's ctest: web/webgpu_runtime and web/webgpu_optable run
# tests/web/run_webgpu.mjs (node + headless Chromium) on the wasm build's web-tests folder.
# Build that first: scripts/build-wasm.sh webgpu_tests (EMBER_WASM_DIR names its build folder).
set(EMBER_WASM_DIR ${CMAKE_SOURCE_DIR}/build-wasm CACHE PATH
    "The wasm build folder whose web-tests the browser tests load")
find_program(EMBER_NODE node)
find_program(EMBER_CHROMIUM NAMES chromium chromium-browser google-chrome)
foreach(suite runtime optable)
  if(EMBER_NODE AND EMBER_CHROMIUM)
    add_test(NAME web/webgpu_${suite}
             COMMAND ${CMAKE_COMMAND} -E env EMBER_CHROMIUM=${EMBER_CHROMIUM}
                     ${EMBER_NODE} --experimental-websocket
                     ${CMAKE_SOURCE_DIR}/tests/web/run_webgpu.mjs ${EMBER_WASM_DIR}/web-tests ${suite})
  else()
    # Fails with the reason instead of vanishing from the list.
    add_test(NAME web/webgpu_${suite}
             COMMAND sh -c "echo 'web/webgpu_${suite}: needs node (${EMBER_NODE}) and chromium \
(${EMBER_CHROMIUM}) on the PATH' >&2; exit 1")
  endif()
  set_tests_properties(web/webgpu_${suite} PROPERTIES TIMEOUT 600 LABELS "web")
endforeach()

# web/demo: the MNIST / Fashion-MNIST demo end to end on wasm and WebGPU (tests/web/demo_test.mjs).
if(EMBER_NODE AND EMBER_CHROMIUM AND TARGET ember_cli)
  add_test(NAME web/demo
           COMMAND ${EMBER_NODE} --experimental-websocket ${CMAKE_SOURCE_DIR}/tests/web/demo_test.mjs
                   --ember $<TARGET_FILE:ember_cli> --out ${CMAKE_CURRENT_BINARY_DIR}/web)
else()
  add_test(NAME web/demo COMMAND sh -c
           "echo 'web/demo needs node (${EMBER_NODE}), chromium (${EMBER_CHROMIUM}) and the ember command (EMBER_BUILD_TOOLS=ON)' >&2; exit 1")
endif()
set_tests_properties(web/demo PROPERTIES TIMEOUT 900 PROCESSORS 2 LABELS web)
