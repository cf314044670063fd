# Tests of issue area "small_truths" (registered from tests/CMakeLists.txt; same helpers and fixtures).
