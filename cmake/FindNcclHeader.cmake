# tpcomm loads libnccl at run time (dlopen), so it needs only nccl.h at build time: from
# TPCOMM_NCCL_INCLUDE_DIR, the CUDA toolkit's include folder, or the nvidia-nccl Python wheel.
set(TPCOMM_NCCL_INCLUDE_DIR "" CACHE PATH "Folder holding nccl.h (empty: search)")
if(NOT TPCOMM_NCCL_INCLUDE_DIR)
  set(_tpcomm_nccl_hints ${CUDAToolkit_INCLUDE_DIRS})
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(Python3_Interpreter_FOUND)
    execute_process(
      COMMAND ${Python3_EXECUTABLE} -c
              "import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'include'))"
      OUTPUT_VARIABLE _tpcomm_wheel_inc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    list(APPEND _tpcomm_nccl_hints ${_tpcomm_wheel_inc})
  endif()
  find_path(_tpcomm_nccl_inc nccl.h HINTS ${_tpcomm_nccl_hints})
  if(NOT _tpcomm_nccl_inc)
    message(FATAL_ERROR "nccl.h not found: install the CUDA toolkit's NCCL or `pip install "
                        "nvidia-nccl-cu13`, or set TPCOMM_NCCL_INCLUDE_DIR")
  endif()
  set(TPCOMM_NCCL_INCLUDE_DIR "${_tpcomm_nccl_inc}" CACHE PATH "Folder holding nccl.h" FORCE)
endif()
message(STATUS "tpcomm: nccl.h from ${TPCOMM_NCCL_INCLUDE_DIR}")
