# The model-parallel layers (magmadnn/parallel/model_parallel/,
# layer/parallel_fully_connected.h, layer/parallel_conv2d.h): one test
# program, run directly (one local rank, label cpu) and, with MPI, under the
# launcher at 1, 2, 3 and 4 ranks (label mpi), oversubscribed, each bounded.
# 3 ranks split 4096 and the tests' small sizes unevenly, 4 ranks LeNet-5's
# 6 filters (2, 2, 1, 1). main() is the strategy tests' (one world
# communicator, failures printed per rank).
add_executable(test_model_parallel strategy_test_main.cpp model_parallel/test_mp_ops.cpp
               model_parallel/test_mp_training.cpp model_parallel/test_mp_conv.cpp model_parallel/test_mp_lenet.cpp)
target_link_libraries(test_model_parallel PRIVATE magmadnn GTest::gtest)
target_include_directories(test_model_parallel PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/model_parallel)
add_test(NAME model_parallel_local COMMAND test_model_parallel)
set_tests_properties(model_parallel_local PROPERTIES LABELS cpu TIMEOUT 300 ENVIRONMENT OMP_NUM_THREADS=1)
magmadnn_add_mpi_test(NAME model_parallel TARGET test_model_parallel RANKS 1 2 3 4 TIMEOUT 600)
