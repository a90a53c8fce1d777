# dMath's distributed matrices (magmadnn/dmath/): one test
# program, run directly (one local rank, label cpu) and, with MPI, under the
# launcher at 1, 2, 3 and 4 ranks (label mpi), oversubscribed, each bounded.
# main() is the strategy tests' (one world communicator, failures printed per rank).
add_executable(test_dmath strategy_test_main.cpp dmath/test_dmath_layout.cpp dmath/test_dmath_redistribute.cpp
               dmath/test_dmath_gemm.cpp dmath/test_dmath_elementwise.cpp
               dmath/test_dmath_replica.cpp)
target_link_libraries(test_dmath PRIVATE magmadnn GTest::gtest)
target_include_directories(test_dmath PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/dmath)
add_test(NAME dmath_local COMMAND test_dmath)
set_tests_properties(dmath_local PROPERTIES LABELS cpu TIMEOUT 120 ENVIRONMENT OMP_NUM_THREADS=1)
magmadnn_add_mpi_test(NAME dmath TARGET test_dmath RANKS 1 2 3 4 TIMEOUT 240)
