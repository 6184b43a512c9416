"""The host's own ``memtree`` subcommands (``serve``, ``daemon``, ``stop``, ``doctor``, ``plugins``): they run
before any plugin loads, so they work when a plugin is broken.  Every other command is a plugin's, registered
through ``memtree_register_commands`` (the built-in ones in ``memtree_plugins.commands``)."""
