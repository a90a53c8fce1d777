function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(LAST_OUTPUT "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${PREFIX} ${CONSUMER_BUILD})
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX})
# HAVE_MPI is what the consumer must find in the installed package.
run(${CMAKE_COMMAND} -S ${CONSUMER_SRC} -B ${CONSUMER_BUILD} -G ${GENERATOR}
    -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_PREFIX_PATH=${PREFIX}
    -DMPI_HELLO_SRC=${MPI_HELLO_SRC} -DEXPECT_MPI=${HAVE_MPI})
run(${CMAKE_COMMAND} --build ${CONSUMER_BUILD})
run(${CONSUMER_BUILD}/consumer)
if(NOT LAST_OUTPUT MATCHES "consumer ok")
  message(FATAL_ERROR "consumer printed: ${LAST_OUTPUT}")
endif()
message(STATUS "${LAST_OUTPUT}")

# The v1 MPI program built against the prefix, on RANKS ranks through LAUNCH.
set(PROGRAM ${CONSUMER_BUILD}/mpi_hello)
include(${MPI_HELLO_CHECK})
