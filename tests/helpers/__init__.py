"""Helpers shared by the test modules (plain functions and constants; the fixtures live in conftest.py).

Test modules import from here, never from ``conftest`` or from one another."""
