# tach train's run and step hand-off: the model's device from the options, the micro-batch moved to
# it in the step's data phase, the GEMMs' precision from the step's settings (test_train_run).
tach_test(test_train_run unit)
