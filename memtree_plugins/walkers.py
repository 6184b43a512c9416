"""Built-in walkers (placeholder module: its hooks land with the issue that builds them)."""
