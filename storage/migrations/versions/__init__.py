"""Alembic revisions, one per schema change, applied in order by :func:`storage.db.migrate`."""
