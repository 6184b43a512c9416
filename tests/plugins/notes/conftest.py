"""This folder's tests on both stores: ``app`` is the ``backend_app`` fixture (tests/conftest.py), an App on
SQLite and one on the session's PostgreSQL (skipped, saying what to install, without the ``postgresql`` extra)."""

from __future__ import annotations

import pytest


@pytest.fixture
def app(backend_app):
    return backend_app
