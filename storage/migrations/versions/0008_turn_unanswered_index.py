"""turn: partial index on the unanswered turns

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 09:00:00

Every web process looks for the turns of dead processes every few seconds
(:mod:`core.frontdesk.recovery`); ``ix_turn_unanswered`` (``turn.id WHERE reply IS NULL``, a partial
index on SQLite and Postgres) keeps that a lookup of the few unanswered turns instead of a scan
of the whole ``turn`` table.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0008'
down_revision: str | None = '0007'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index('ix_turn_unanswered', 'turn', ['id'], unique=False,
                    sqlite_where=sa.text('reply IS NULL'), postgresql_where=sa.text('reply IS NULL'))


def downgrade() -> None:
    op.drop_index('ix_turn_unanswered', table_name='turn')
