# Runs mpi_fault_program in MODE on RANKS ranks and checks that the job
# failed loudly: non-zero exit, and every rank other than 1 printed a
# CommError naming rank 1, step 7 and the operation.
#   PROGRAM, MODE, RANKS, LAUNCH (the launcher and its flags, '|'-separated)
string(REPLACE "|" ";" _launch "${LAUNCH}")
# 60 s: the job takes 1-14 s; in a bare Debian 12 root beside a second
# root's build (load 4 on 2 cores) the dtype case once had no output at all
# after 20 s, and passed 5 of 5 in about 1 s on the same Open MPI 4.1 here.
execute_process(COMMAND ${_launch} ${PROGRAM} ${MODE} 2000
                RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err TIMEOUT 60)
message(STATUS "${MODE}: exit ${_rc}\n${_out}${_err}")
if(_rc EQUAL 0)
  message(FATAL_ERROR "${MODE}: the job exited 0; a misbehaving rank must fail it")
endif()
if(_rc MATCHES "timeout")
  # Open MPI 4.1's mpirun sometimes never returns when a rank has finalized
  # and another calls MPI_Abort, even with every rank gone (reproduced with
  # plain MPI; docs/notes/open-mpi-behaviour.md). Only then is a hung launcher excused,
  # and only once every rank has reported and the abort was made.
  if(NOT MODE STREQUAL "exit" OR NOT _err MATCHES "MPI_ABORT was invoked")
    message(FATAL_ERROR "${MODE}: the job hung")
  endif()
  message(STATUS "${MODE}: mpirun hung after MPI_Abort (known Open MPI 4.1 issue); killed")
endif()
if(_out MATCHES "no error")
  message(FATAL_ERROR "${MODE}: a rank finished without noticing rank 1")
endif()
math(EXPR _last "${RANKS} - 1")
foreach(_r RANGE ${_last})
  if(_r EQUAL 1)
    continue()
  endif()
  string(REGEX MATCH "rank ${_r}: CommError: [^\n]*" _line "${_out}")
  if(NOT _line)
    message(FATAL_ERROR "${MODE}: rank ${_r} printed no CommError")
  endif()
  foreach(_want "rank 1" "step 7" "allreduce")
    string(FIND "${_line}" "${_want}" _at)
    if(_at EQUAL -1)
      message(FATAL_ERROR "${MODE}: rank ${_r}'s message does not name '${_want}': ${_line}")
    endif()
  endforeach()
endforeach()
