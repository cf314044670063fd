# Tests of issue area "contention" (registered from tests/CMakeLists.txt; same helpers and fixtures).
