"""The ``memtree`` commands that start, stop and repair a project's daemon (``serve``, ``daemon``, ``stop``,
``doctor``): the host dispatches them before any plugin loads (:data:`memtree_core.cli.HOST_COMMANDS`)."""
