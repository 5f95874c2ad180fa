"""Alembic migration environment of the medbot schema (configured in :mod:`storage.db`)."""
