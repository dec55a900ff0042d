# The WebAssembly build (emscripten; scripts/build-wasm.sh): the portable core (core, ir,
# runtime, codegen, tensor, ops, autodiff, nn, optim, record's safetensors, the ref backend),
# the wasm cpu backend (src/backends/wasm: SIMD128, threads when built with -pthread), the
# WebGPU backend (src/backends/webgpu, over the browser's navigator.gpu through web/webgpu_lib.js)
# and the JavaScript API's C side (src/web). Outputs under <build>/web/: ember.mjs + ember.wasm
# (single-threaded) and ember-threads.mjs + .wasm + .worker.js (pthreads, for cross-origin
# isolated pages). The native build never includes this file.
file(GLOB_RECURSE EMBER_WASM_SOURCES CONFIGURE_DEPENDS
     ${CMAKE_CURRENT_SOURCE_DIR}/src/core/*.cpp
     ${CMAKE_CURRENT_SOURCE_DIR}/src/ir/*.cpp
     ${CMAKE_CURRENT_SOURCE_DIR}/src/runtime/*.cpp
     ${CMAKE_CURRENT_SOURCE_DIR}/src/codegen/*.cpp
     ${CMAKE_CURRENT_SOURCE_DIR}/src/tensor/*.cpp
     ${CMAKE_CURRENT_SOURCE_DIR}/src/ops/*.cpp
     ${CMAKE_CURRENT_SOURCE_DIR}/src/autodiff/*.cpp
     ${CMAKE_CURRENT_SOURCE_DIR}/src/nn/*.cpp
     ${CMAKE_CURRENT_SOURCE_DIR}/src/optim/*.cpp
     ${CMAKE_CURRENT_SOURCE_DIR}/src/backends/ref/*.cpp
     ${CMAKE_CURRENT_SOURCE_DIR}/src/backends/wasm/*.cpp
     ${CMAKE_CURRENT_SOURCE_DIR}/src/backends/webgpu/*.cpp)
# nn's data-parallel wrapper needs ember::dist (processes); the browser has none.
list(FILTER EMBER_WASM_SOURCES EXCLUDE REGEX "/src/nn/parallel/")
list(APPEND EMBER_WASM_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/src/record/safetensors.cpp
     ${CMAKE_CURRENT_SOURCE_DIR}/src/record/file_io.cpp)
file(GLOB EMBER_REF_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/backends/ref/*.cpp)
set_property(SOURCE ${EMBER_REF_SOURCES} APPEND PROPERTY COMPILE_OPTIONS -ffp-contract=off)

# nlohmann-json (safetensors' header) is header-only: expose just its folder, never /usr/include
# (glibc's headers would shadow emscripten's libc).
set(EMBER_WASM_JSON_DIR ${CMAKE_CURRENT_BINARY_DIR}/json-include)
file(MAKE_DIRECTORY ${EMBER_WASM_JSON_DIR})
find_path(EMBER_NLOHMANN_DIR nlohmann/json.hpp PATHS /usr/include NO_CMAKE_FIND_ROOT_PATH REQUIRED)
file(CREATE_LINK ${EMBER_NLOHMANN_DIR}/nlohmann ${EMBER_WASM_JSON_DIR}/nlohmann SYMBOLIC)

# One set of flags for the library and everything linked with it: C++ exceptions on, SIMD128.
set(EMBER_WASM_FLAGS -fexceptions -msimd128)

function(ember_wasm_library name threads)
  add_library(${name} STATIC ${EMBER_WASM_SOURCES})
  target_include_directories(${name} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include
                             PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  target_include_directories(${name} SYSTEM PRIVATE ${EMBER_WASM_JSON_DIR})
  target_compile_features(${name} PUBLIC cxx_std_20)
  target_compile_options(${name} PRIVATE -Wall -Wextra)
  target_compile_options(${name} PUBLIC ${EMBER_WASM_FLAGS})
  target_link_options(${name} PUBLIC -fexceptions)
  # The WebGPU backend's JavaScript side, linked into everything that links the library.
  target_link_options(${name} INTERFACE
                      "SHELL:--js-library ${CMAKE_CURRENT_SOURCE_DIR}/web/webgpu_lib.js")
  target_compile_definitions(${name} PUBLIC EMBER_HAVE_WEBGPU=1)
  if(threads)
    target_compile_options(${name} PUBLIC -pthread)
    target_link_options(${name} PUBLIC -pthread)
  endif()
endfunction()

ember_wasm_library(ember OFF)
add_library(ember::ember ALIAS ember)
option(EMBER_WASM_THREADS "Also build the pthreads flavour (ember_threads, ember-threads.mjs)" ON)
if(EMBER_WASM_THREADS)
  ember_wasm_library(ember_threads ON)
endif()

# The JavaScript API (web/ember.mjs imports the module this makes). MODULARIZE + EXPORT_ES6: a
# factory the page calls; no file system (models arrive as bytes); memory grows on demand.
file(GLOB EMBER_WEB_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/web/*.cpp)
set(EMBER_WEB_OUT ${CMAKE_CURRENT_BINARY_DIR}/web)
set(EMBER_WEB_LINK -sMODULARIZE=1 -sEXPORT_ES6=1 -sEXPORT_NAME=createEmberModule
    -sALLOW_MEMORY_GROWTH=1 -sENVIRONMENT=web,worker,node -sFILESYSTEM=0
    -sEXPORTED_RUNTIME_METHODS=[UTF8ToString,stringToUTF8,lengthBytesUTF8])
function(ember_web_module target lib output)
  add_executable(${target} ${EMBER_WEB_SOURCES})
  target_include_directories(${target} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  target_include_directories(${target} SYSTEM PRIVATE ${EMBER_WASM_JSON_DIR})
  target_link_libraries(${target} PRIVATE ${lib})
  target_link_options(${target} PRIVATE ${EMBER_WEB_LINK} ${ARGN})
  set_target_properties(${target} PROPERTIES OUTPUT_NAME ${output} SUFFIX ".mjs"
                        RUNTIME_OUTPUT_DIRECTORY ${EMBER_WEB_OUT}
                        LINK_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/web/webgpu_lib.js)
endfunction()
if(EMBER_WEB_SOURCES)
  ember_web_module(ember_web ember ember)
  if(EMBER_WASM_THREADS)
    ember_web_module(ember_web_threads ember_threads ember-threads -sUSE_PTHREADS=1
                     -sPTHREAD_POOL_SIZE=navigator.hardwareConcurrency)
  endif()
endif()

# bench/wasm_inference.cpp under node, one per flavour (bench/wasm_inference.sh runs them and the
# native build's bench_wasm_inference). main() runs on a pthread in the threads flavour so the
# pool's workers start while it runs.
if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/bench/wasm_inference.cpp)
  foreach(flavour IN ITEMS ember ember_threads)
    if(NOT TARGET ${flavour})
      continue()
    endif()
    string(REPLACE "ember" "bench_wasm_inference" bench ${flavour})
    add_executable(${bench} ${CMAKE_CURRENT_SOURCE_DIR}/bench/wasm_inference.cpp)
    target_link_libraries(${bench} PRIVATE ${flavour})
    target_include_directories(${bench} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/bench)
    target_link_options(${bench} PRIVATE -sALLOW_MEMORY_GROWTH=1 -sENVIRONMENT=node
                        -sEXIT_RUNTIME=1 -sWASM_ASYNC_COMPILATION=0)
    if(flavour STREQUAL "ember_threads")
      target_link_options(${bench} PRIVATE -sPTHREAD_POOL_SIZE=8 -sPROXY_TO_PTHREAD=1)
    endif()
    set_target_properties(${bench} PROPERTIES SUFFIX ".js")
  endforeach()
endif()

# Tests of the wasm build: tests/wasm (run by node through ctest in this folder) and
# tests/web (modules the browser tests load; run by the native build's ctest, tests/web/*.mjs).
if(EMBER_BUILD_TESTS)
  enable_testing()
  foreach(dir tests/wasm tests/web)
    if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${dir}/CMakeLists.txt)
      add_subdirectory(${dir})
    endif()
  endforeach()
endif()
