# Neural-network benchmarks: the reference trainer and the raw SGEMM against the single-core
# peak; bench/nn_compare.sh runs them beside PyTorch (bench/torch_mlp.py) and prints ratios.
add_executable(nn_benchmark ${CMAKE_CURRENT_LIST_DIR}/nn_benchmark.cc)
target_link_libraries(nn_benchmark PRIVATE acan_nn acan_common benchmark::benchmark)
# bench/fashion_compare.sh: exports acan's initial model and data order for bench/torch_fashion.py.
add_executable(fashion_export ${CMAKE_CURRENT_LIST_DIR}/fashion_export.cc)
target_link_libraries(fashion_export PRIVATE acan_nn acan_common)
