"""This folder's tests on both stores: ``app`` is the ``backend_app`` fixture (tests/conftest.py), and tests
that open their own ``App`` or run ``memtree`` take the ``backend`` fixture (the environment names the
store)."""

from __future__ import annotations

import pytest


@pytest.fixture
def app(backend_app):
    return backend_app
