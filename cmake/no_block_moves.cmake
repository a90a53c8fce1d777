# Issue 40, point 3: "no model-parallel code outside dmath/ moves matrix
# blocks between ranks". Fails naming file and line when a file of the
# model-parallel folders calls a Communicator collective or point-to-point
# operation itself, unless the line says why it moves no matrix block
# ("// not a matrix block: <reason>", e.g. two integers of generator state).
# The transitions call dMath (magmadnn/dmath/), which owns the data movement.
#
#   cmake -DSOURCE_DIR=<repo> [-DPLANT=<file>] -P cmake/no_block_moves.cmake
#
# PLANT scans one more file (the test that a planted allgather is caught).
cmake_minimum_required(VERSION 3.25)
get_filename_component(SOURCE_DIR "${SOURCE_DIR}" ABSOLUTE)
file(GLOB files ${SOURCE_DIR}/magmadnn/parallel/model_parallel/*.h ${SOURCE_DIR}/magmadnn/parallel/model_parallel/*.cpp
     ${SOURCE_DIR}/magmadnn/parallel/layers/*.h ${SOURCE_DIR}/magmadnn/parallel/layers/*.cpp)
if(PLANT)
  list(APPEND files ${PLANT})
endif()
set(call "(\\.|->)(allgather|allgatherv|alltoall|reduce_scatter|isend|irecv|send|recv|allreduce|broadcast|reduce)\\(")
set(found "")
foreach(f IN LISTS files)
  file(STRINGS ${f} lines)
  set(n 0)
  foreach(line IN LISTS lines)
    math(EXPR n "${n} + 1")
    if(line MATCHES "${call}" AND NOT line MATCHES "// not a matrix block: ")
      string(STRIP "${line}" shown)
      string(APPEND found "  ${f}:${n}: ${shown}\n")
    endif()
  endforeach()
endforeach()
if(found)
  message(FATAL_ERROR "magmadnn: model-parallel code moves data between ranks itself; call dMath (magmadnn/dmath/) "
                      "instead, or mark a line that moves no matrix block with \"// not a matrix block: <why>\":\n"
                      "${found}")
endif()
