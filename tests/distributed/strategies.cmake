# The data-parallel strategies (magmadnn/parallel/strategy.h), and a rank
# that fails telling the others (test_rank_failure.cpp): one test program,
# run directly (one local rank, label cpu) and, with MPI, under the launcher
# at 1, 2 and 4 ranks (label mpi), oversubscribed, each bounded.
#
# A new strategy's test is a file test_strategy_NAME.cpp beside these: the
# glob adds it to the program (and so to every run above) with no edit here.
# Such a test uses strategy_world() (strategy_test_util.h): the launcher's
# ranks under mpirun, one local rank otherwise (where it may run N ranks as
# threads, distributed::make_thread_group).
file(GLOB _strategy_tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/test_strategy_*.cpp)
add_executable(test_strategies strategy_test_main.cpp test_strategies.cpp test_rank_failure.cpp ${_strategy_tests})
target_link_libraries(test_strategies PRIVATE magmadnn GTest::gtest)
target_include_directories(test_strategies PRIVATE ${PROJECT_SOURCE_DIR}/tests)
add_test(NAME strategies_local COMMAND test_strategies)
set_tests_properties(strategies_local PROPERTIES LABELS cpu TIMEOUT 120 ENVIRONMENT OMP_NUM_THREADS=1)
magmadnn_add_mpi_test(NAME strategies TARGET test_strategies RANKS 1 2 4 TIMEOUT 180)
