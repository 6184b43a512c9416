"""Fixed sizes of the daemon's pools: here, stdlib-free of the SDK, so ``memtree info`` can show them cheaply."""

# Sync tools run on worker threads of their own, not on the SDK's default pool (40 threads, shared with
# everything else that runs in a thread): calls that wait on something slow (a long bash command) must not
# leave other sessions without a thread.  Every tool has a deadline, so a thread is always given back.
TOOL_THREADS = 256
# One session's share of it: a session running many slow calls waits for its own threads, and the others
# keep theirs (40 hung calls in one session leave the rest of the pool to everyone else).
SESSION_TOOL_THREADS = 32
