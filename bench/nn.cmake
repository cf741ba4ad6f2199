# Neural-network benchmarks: the reference trainer and the raw SGEMM against the single-core
# peak; bench/nn_compare.sh runs them beside PyTorch (bench/torch_mlp.py) and prints ratios.
add_executable(nn_benchmark ${CMAKE_CURRENT_LIST_DIR}/nn_benchmark.cc)
target_link_libraries(nn_benchmark PRIVATE acan_nn acan_common benchmark::benchmark)
