# The data-parallel strategies (magmadnn/distributed/strategy.h): one test
# program, run directly (one local rank, label cpu) and, with MPI, under the
# launcher at 1, 2 and 4 ranks (label mpi), oversubscribed, each bounded.
add_executable(test_strategies strategy_test_main.cpp test_strategies.cpp)
target_link_libraries(test_strategies PRIVATE magmadnn GTest::gtest)
add_test(NAME strategies_local COMMAND test_strategies)
set_tests_properties(strategies_local PROPERTIES LABELS cpu TIMEOUT 120 ENVIRONMENT OMP_NUM_THREADS=1)
if(MAGMADNN_HAVE_MPI)
  string(REPLACE "|" ";" _strategy_launch "${MAGMADNN_MPI_LAUNCH}")
  list(SUBLIST _strategy_launch 3 -1 _strategy_launch_flags)
  foreach(_ranks 1 2 4)
    add_test(NAME strategies_np${_ranks}
             COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${_ranks} ${_strategy_launch_flags}
                     $<TARGET_FILE:test_strategies>)
    set_tests_properties(strategies_np${_ranks} PROPERTIES LABELS mpi TIMEOUT 180
                         ENVIRONMENT "${MAGMADNN_MPI_TEST_ENV};OMP_NUM_THREADS=1")
  endforeach()
endif()
