"""Built-in chunkers (placeholder module: its hooks land with the issue that builds them)."""
