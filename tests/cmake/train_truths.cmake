# Tests of issue area "train_truths" (registered from tests/CMakeLists.txt; same helpers and fixtures).
