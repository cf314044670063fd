# The PyTorch training peers of the CUDA training step (scripts/peers/gpu_train_peers.py) run tiny
# on the CPU: figures for every workload and engine, the same parameters trained on both sides,
# the model FLOPs' formula, a failing tach recorded with its message (skips without the
# development virtualenv).
add_test(NAME peers.train_tiny COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/peers/train_peers.sh $<TARGET_FILE:tach_cli>)
set_tests_properties(peers.train_tiny PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 900)
