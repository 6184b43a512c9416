"""Code several built-in plugins share; registers no hooks."""
