"""Fixed sizes of the daemon's pools: here, stdlib-free of the SDK, so ``memtree info`` can show them cheaply."""

# Sync tools run on worker threads of their own, not on the SDK's default pool (40 threads, shared with
# everything else that runs in a thread): calls that wait on something slow (a long bash command) must not
# leave other sessions without a thread.  Every tool has a deadline, so a thread is always given back.
TOOL_THREADS = 256
