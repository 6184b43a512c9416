"""``memtree serve``: a forwarder between an agent's stdio and the project's daemon, standard library only.

The daemon and the host may import from this package, never the reverse (docs/architecture.md, process model).
"""
