"""Built-in semantic walkers: embedding_indexer, dedupe, summarizer (placeholder module: its hooks land with the issue that builds them)."""
