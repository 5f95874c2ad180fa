"""Persistence: SQLModel tables and repositories (SQLite by default, Postgres by URL)."""
