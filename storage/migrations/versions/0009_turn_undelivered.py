"""turn: undelivered flag and its partial index

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02 09:00:00

A channel's turn is ``undelivered`` from its write-ahead until its reply was handed to the
platform. A process killed after storing a reply and before sending it left a turn that no one
sent (recovery looked only at turns without a reply); a live process now sends such a turn's
stored reply (:func:`core.frontdesk.recovery.claim_undelivered`), and the reply order gate keeps a
session's later replies behind it. ``ix_turn_undelivered`` (``turn.id WHERE undelivered``)
keeps that look-up to the few unsent turns. Existing turns are not undelivered (``false``).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0009'
down_revision: str | None = '0008'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('turn', schema=None) as batch_op:
        batch_op.add_column(sa.Column('undelivered', sa.Boolean(), nullable=False,
                                      server_default=sa.false()))
    op.create_index('ix_turn_undelivered', 'turn', ['id'], unique=False,
                    sqlite_where=sa.text('undelivered'), postgresql_where=sa.text('undelivered'))


def downgrade() -> None:
    op.drop_index('ix_turn_undelivered', table_name='turn')
    with op.batch_alter_table('turn', schema=None) as batch_op:
        batch_op.drop_column('undelivered')
