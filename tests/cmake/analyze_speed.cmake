# tach analyze's speed: no timed test (on a shared machine it would flake). What the speed rests on
# is tested in test_analyze (TraceReader.TextCutAnywhereBetweenReadsReadsTheSame: keys and numbers
# looked at in place, cut between reads anywhere; TraceReader.GzipMembersTrailingBytesAndCorruptStreams:
# igzip); the figures against HTA are measured by scripts/peers/analyze_peers.py into docs/perf.md.
