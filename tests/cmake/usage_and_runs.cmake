# Tests of issue area "usage_and_runs" (registered from tests/CMakeLists.txt; same helpers and fixtures).
