# Cross-compiles Ember for 64-bit ARM Linux (aarch64) on a Debian 12 x86-64 host, with Debian's
# cross compiler and the arm64 (multiarch) builds of the libraries. scripts/arm64-check.sh sets
# everything up, builds and runs the tests under qemu; docs/portability.md explains.
#
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
#         -DEMBER_ARM64_SYSROOT=/opt/ember-arm64-sysroot
#
# EMBER_ARM64_SYSROOT: the arm64 -dev packages that cannot be co-installed with their amd64
# versions (libdnnl-dev: dnnl_config.h differs; libonnx-dev: needs libonnxifi, whose
# /usr/lib/libonnxifi.so is not multiarch) are unpacked there; it is searched before /.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

set(EMBER_ARM64_SYSROOT "/opt/ember-arm64-sysroot" CACHE PATH
    "Where the non-co-installable arm64 -dev packages are unpacked")
# Try-compiles must see the same settings.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES EMBER_ARM64_SYSROOT)

# Libraries and headers: the sysroot above, the cross toolchain's own, then the host's multiarch
# tree (/usr/lib/aarch64-linux-gnu, /usr/include, /usr/share/cmake for arch-independent packages).
# Programs (protoc) are the host's.
set(CMAKE_FIND_ROOT_PATH "${EMBER_ARM64_SYSROOT}" /usr/aarch64-linux-gnu /)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config: only the arm64 .pc files (and the arch-independent ones).
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# Runs the arm64 test binary (and CMake's checks) on the x86-64 host. No -L prefix: the
# cross toolchain's libc (/usr/aarch64-linux-gnu, 2.36-8cross1) differs from the multiarch
# libc6:arm64 the libraries' dependencies install (/lib/aarch64-linux-gnu); its loader then
# loads the other's libc.so.6 and hangs. The multiarch loader /lib/ld-linux-aarch64.so.1 is used.
find_program(EMBER_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)
if(EMBER_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${EMBER_QEMU_AARCH64}")
endif()
