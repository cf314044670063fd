# tach analyze: torch.profiler traces read as they stream (errors for cut or foreign files), the op
# table against torch's key_averages() on real traces, steps and GPU time, and the command.
tach_test(test_analyze unit)
