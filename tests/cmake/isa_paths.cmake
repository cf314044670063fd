# Tests of issue area "isa_paths" (registered from tests/CMakeLists.txt; same helpers and fixtures).
