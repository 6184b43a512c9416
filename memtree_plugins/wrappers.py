"""Built-in wrappers (placeholder module: its hooks land with the issue that builds them)."""
