"""Built-in selectors (placeholder module: its hooks land with the issue that builds them)."""
