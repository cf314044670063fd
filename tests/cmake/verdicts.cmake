# Tests of issue area "verdicts" (registered from tests/CMakeLists.txt; same helpers and fixtures).
