# Hybrid plans (magmadnn/run/parallel_plan.h): configs of data- and
# model-parallel layers trained across ranks against one process, step for
# step, and their checkpoints (gathered whole, resumed on any rank count). Run directly (one local rank: the plain network, label cpu) and under
# the launcher at 1 to 4 ranks (label mpi), oversubscribed, each bounded. 3
# ranks split the batches and 4096 unevenly. main() is the strategy tests'.
add_executable(test_hybrid strategy_test_main.cpp hybrid/test_hybrid.cpp hybrid/test_hybrid_checkpoint.cpp)
target_link_libraries(test_hybrid PRIVATE magmadnn GTest::gtest)
target_include_directories(test_hybrid PRIVATE ${PROJECT_SOURCE_DIR}/tests)
add_test(NAME hybrid_local COMMAND test_hybrid)
set_tests_properties(hybrid_local PROPERTIES LABELS cpu TIMEOUT 300 ENVIRONMENT OMP_NUM_THREADS=1)
magmadnn_add_mpi_test(NAME hybrid TARGET test_hybrid RANKS 1 2 3 4 TIMEOUT 240)
