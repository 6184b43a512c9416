"""The host's own ``memtree plugins`` (it works when a plugin is broken) and what every command shares; the
daemon's commands are in :mod:`memtree_core.daemon.commands`, the plugins' through ``memtree_register_commands``."""
