# tach bench --engine: the engine worker client (test_engines: the protocol against a stand-in
# worker that misbehaves on request) and the engine axis of bench and compare.
tach_test(test_engines unit)
