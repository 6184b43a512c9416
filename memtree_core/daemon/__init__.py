"""The project's daemon (DESIGN.md §7): one process per project that owns the store, the ingest socket, the
walkers, and serves MCP sessions over a Unix socket, one session per connection.

This package's ``__init__`` stays empty on purpose: ``memtree serve`` imports :mod:`memtree_core.daemon.control`
(stdlib only) and must not pay for the SDK that :mod:`memtree_core.daemon.main` pulls in.
"""
