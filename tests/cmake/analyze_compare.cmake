# tach analyze A B (two runs of real torch.profiler traces compared) and the roofline's memory side.
tach_test(test_analyze_compare unit)
