"""``memtree serve``, standard library only: the rest of memtree may import from this package, never the
reverse (docs/architecture.md#the-forwarder)."""
