"""response cache: structured key, ownership of personal answers, savings

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24 07:20:00

Adds the structured key of SPEC §11 (``struct_key`` and its parts) and what a hit saves
(``prompt_tokens``, ``llm_calls``) to ``cacheentry``. Existing entries are deleted: they have no
key (so they could never be candidates again) and were shared under the old ownership rule
(profile only), which let answers built from a user's dialogue reach other users.
A cache loses nothing by being emptied.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision: str = '0006'
down_revision: str | None = '0005'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("DELETE FROM cacheentry")
    with op.batch_alter_table('cacheentry', schema=None) as batch_op:
        batch_op.add_column(sa.Column('struct_key', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True))
        batch_op.add_column(sa.Column('concept_key', sa.Text(), nullable=False, server_default=''))
        batch_op.add_column(sa.Column('qtype', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False, server_default=''))
        batch_op.add_column(sa.Column('polarity', sqlmodel.sql.sqltypes.AutoString(length=400), nullable=False, server_default=''))
        batch_op.add_column(sa.Column('soft_polarity', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False, server_default=''))
        batch_op.add_column(sa.Column('numbers', sqlmodel.sql.sqltypes.AutoString(length=400), nullable=False, server_default=''))
        batch_op.add_column(sa.Column('prompt_tokens', sa.Integer(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('llm_calls', sa.Integer(), nullable=False, server_default='0'))
        batch_op.create_index(batch_op.f('ix_cacheentry_struct_key'), ['struct_key'], unique=False)
    # every process's mirror must notice the deletion (storage.repositories.cache_version)
    op.execute("UPDATE generation SET value = value + 1 WHERE name = 'cacheentry'")


def downgrade() -> None:
    with op.batch_alter_table('cacheentry', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_cacheentry_struct_key'))
        for name in ('llm_calls', 'prompt_tokens', 'numbers', 'soft_polarity', 'polarity',
                     'qtype', 'concept_key', 'struct_key'):
            batch_op.drop_column(name)
