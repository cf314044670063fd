# tach bench --train --engine: other engines' training points (test_engine_train: the stand-in
# worker and tach's python-matmul always; torch and torch-compile against tach's losses with the
# development virtualenv, skipped without it).
tach_test(test_engine_train unit)
