"""Built-in redaction (placeholder module: its hooks land with the issue that builds them)."""
