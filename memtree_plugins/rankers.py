"""Built-in rankers (placeholder module: its hooks land with the issue that builds them)."""
