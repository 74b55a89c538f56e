# -DTPCOMM_FUZZ=ON: libFuzzer targets for the parsers of untrusted input (tests/fuzz/), with
# AddressSanitizer + UBSan. Needs clang (Debian: clang + libclang-rt-<version>-dev), in a build
# folder of its own:
#   cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DTPCOMM_FUZZ=ON -DTPCOMM_KERNELS_FROM=$PWD/build
#   (the kernels of a main build, or -DTPCOMM_CUDA_ARCHS=75-real to compile them for one arch)
#   cmake --build build-fuzz --target tpcomm_fuzzers && tests/fuzz/run.sh build-fuzz 10
# Every C++ file is compiled with the coverage and sanitizer instrumentation, so the targets link
# the project's own static library (no second list of parser sources to keep in step). The kernels
# are uninstrumented (another build's objects, or nvcc with its default host compiler): the parsers
# are C++.
option(TPCOMM_FUZZ "Build the libFuzzer targets of tests/fuzz (clang only)" OFF)

if(TPCOMM_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "TPCOMM_FUZZ=ON needs clang as the C++ compiler (libFuzzer); configure a "
                        "separate build folder with -DCMAKE_CXX_COMPILER=clang++")
  endif()
  set(TPCOMM_FUZZ_FLAGS -fsanitize=fuzzer-no-link,address,undefined
      -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g)
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${TPCOMM_FUZZ_FLAGS}>")
endif()
