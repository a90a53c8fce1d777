# Runs examples/v1/mpi_hello and checks what it printed. Used with -P by the
# v1_mpi_hello test and include()d by tests/install/run_consumer.cmake.
#   PROGRAM  the mpi_hello executable
#   RANKS    how many ranks it is started on (1: run directly)
#   LAUNCH   the launcher and its flags, separated by '|' (empty when RANKS is 1)
if(NOT PROGRAM OR NOT RANKS)
  message(FATAL_ERROR "run_mpi_hello.cmake needs PROGRAM and RANKS")
endif()
string(REPLACE "|" ";" _launch "${LAUNCH}")
execute_process(COMMAND ${_launch} ${PROGRAM}
                RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err TIMEOUT 100)
message(STATUS "${_launch} ${PROGRAM}:\n${_out}${_err}")
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "mpi_hello failed (${_rc})")
endif()
math(EXPR _last "${RANKS} - 1")
foreach(_r RANGE ${_last})
  if(NOT _out MATCHES "rank ${_r} of ${RANKS}: local sum")
    message(FATAL_ERROR "mpi_hello: no line from rank ${_r} of ${RANKS}")
  endif()
endforeach()
if(_out MATCHES "FAIL" OR NOT _out MATCHES "mpi_hello ok: ${RANKS} ranks")
  message(FATAL_ERROR "mpi_hello did not report success on ${RANKS} ranks")
endif()
