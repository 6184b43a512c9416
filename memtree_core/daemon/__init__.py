"""The project's daemon (docs/architecture.md, process model): one process per project that owns the store, the ingest socket, the
walkers, and serves MCP sessions over a Unix socket, one session per connection.

This package's ``__init__`` stays empty on purpose: a daemon forked by ``memtree serve`` imports
:mod:`memtree_core.daemon.control` first and the SDK only later, in :mod:`memtree_core.daemon.main`.
"""
