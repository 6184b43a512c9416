"""memtree's acceptance harness (spec §11) and benchmarks (eval/bench)."""
