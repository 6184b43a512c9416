"""memtree's acceptance harness and benchmarks (eval/bench)."""
