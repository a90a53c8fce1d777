# Pipelines (magmadnn/parallel/pipeline/): stages as threads of one process
# (ThreadCommunicator; MLP and LeNet-5 at 2 and 4 stages, GPipe and 1F1B,
# 1 to 8 micro-batches, against one process step for step; schedules, cuts
# and refusals), label cpu; and the world's ranks as the stages under the
# launcher at 2 and 4 ranks (label mpi), run directly as one stage (cpu).
magmadnn_add_test(NAME test_pipeline_threads LABELS cpu SOURCES pipeline/test_pipeline_threads.cpp)
target_include_directories(test_pipeline_threads PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/pipeline)
add_executable(test_pipeline_world strategy_test_main.cpp pipeline/test_pipeline_world.cpp)
target_link_libraries(test_pipeline_world PRIVATE magmadnn GTest::gtest)
target_include_directories(test_pipeline_world PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/pipeline)
add_test(NAME pipeline_local COMMAND test_pipeline_world)
set_tests_properties(pipeline_local PROPERTIES LABELS cpu TIMEOUT 120 ENVIRONMENT OMP_NUM_THREADS=1)
magmadnn_add_mpi_test(NAME pipeline TARGET test_pipeline_world RANKS 2 4 TIMEOUT 240)
