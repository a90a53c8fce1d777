# The data-parallel strategies (magmadnn/parallel/strategy.h), and a rank
# that fails telling the others (test_rank_failure.cpp): one test program,
# run directly (one local rank, label cpu) and, with MPI, under the launcher
# at 1, 2 and 4 ranks (label mpi), oversubscribed, each bounded.
add_executable(test_strategies strategy_test_main.cpp test_strategies.cpp test_rank_failure.cpp)
target_link_libraries(test_strategies PRIVATE magmadnn GTest::gtest)
target_include_directories(test_strategies PRIVATE ${PROJECT_SOURCE_DIR}/tests)
add_test(NAME strategies_local COMMAND test_strategies)
set_tests_properties(strategies_local PROPERTIES LABELS cpu TIMEOUT 120 ENVIRONMENT OMP_NUM_THREADS=1)
magmadnn_add_mpi_test(NAME strategies TARGET test_strategies RANKS 1 2 4 TIMEOUT 180)
