# tach analyze on real GPU traces (Holistic Trace Analysis's own test data, with HTA's numbers
# beside them): breakdowns, overlap, kernel types, top kernels and launches against HTA's; epoch
# timestamps, ROCm and 2022 kineto traces read; ranks missing, assumed or claimed twice.
tach_test(test_analyze_real unit)
