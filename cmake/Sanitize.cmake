# -DTPCOMM_SANITIZE=ON: AddressSanitizer + UndefinedBehaviorSanitizer on all host code, for the CPU
# suite (scripts/test.sh runs it in CI). C++ gets the flags directly, the host side of .cu files
# through nvcc's -Xcompiler; device code is not instrumented (compute-sanitizer covers it, on a
# GPU). UBSan findings abort (-fno-sanitize-recover) so a test that hits one fails instead of only
# printing. Use a separate build folder that links another build's kernels
# (-DTPCOMM_KERNELS_FROM=build, src/CMakeLists.txt) or builds one architecture
# (-DTPCOMM_CUDA_ARCHS=75-real): the kernels are not what this build checks. Without a driver (CI) cudart fails cleanly and the CPU
# suite needs no ASAN_OPTIONS; on a GPU machine the CUDA driver maps memory where ASan keeps its
# shadow gap, so run there with ASAN_OPTIONS=protect_shadow_gap=0.
option(TPCOMM_SANITIZE "Build host code with -fsanitize=address,undefined (CPU suite in CI)" OFF)

# One flag per word: nvcc splits -Xcompiler values at commas.
set(TPCOMM_SANITIZER_FLAGS -fsanitize=address -fsanitize=undefined -fno-sanitize-recover=undefined
    -fno-omit-frame-pointer)

if(TPCOMM_SANITIZE)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # clang links its sanitizer runtimes into executables only, so libtpcomm.so (linked with
    # --no-undefined) would need -shared-libasan and a runtime path; only g++ is set up and tested.
    message(FATAL_ERROR "TPCOMM_SANITIZE=ON needs g++ as the C++ compiler (this is "
                        "${CMAKE_CXX_COMPILER_ID}); the clang build is TPCOMM_FUZZ=ON")
  endif()
  string(REPLACE ";" "," _tpcomm_san_xcompiler "${TPCOMM_SANITIZER_FLAGS}")
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${TPCOMM_SANITIZER_FLAGS}>"
                      "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=${_tpcomm_san_xcompiler}>")
  add_link_options("$<$<LINK_LANGUAGE:C,CXX>:-fsanitize=address;-fsanitize=undefined>"
                   "$<$<LINK_LANGUAGE:CUDA>:-Xcompiler=-fsanitize=address,-fsanitize=undefined>")
endif()
