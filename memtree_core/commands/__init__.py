"""One module per ``memtree`` subcommand."""
