"""Initial schema: user, turn, fact, cacheentry (the tables as the agent core created them).

Revision ID: 0001
Revises:
Create Date: 2026-11-22 04:52:42.174705
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = '0001'
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('cacheentry',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('question', sa.Text(), nullable=False),
    sa.Column('question_key', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('answer', sa.Text(), nullable=False),
    sa.Column('sources', sa.JSON(), nullable=False),
    sa.Column('lang', sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
    sa.Column('embedder', sqlmodel.sql.sqltypes.AutoString(length=120), nullable=False),
    sa.Column('embedding', sa.LargeBinary(), nullable=False),
    sa.Column('owner_user_id', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
    sa.Column('profile_fingerprint', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True),
    sa.Column('source_turn_id', sa.Integer(), nullable=True),
    sa.Column('quality', sa.Float(), nullable=False),
    sa.Column('answer_tokens', sa.Integer(), nullable=False),
    sa.Column('generation_ms', sa.Float(), nullable=False),
    sa.Column('hits', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('last_used_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('cacheentry', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_cacheentry_last_used_at'), ['last_used_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_cacheentry_owner_user_id'), ['owner_user_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_cacheentry_question_key'), ['question_key'], unique=False)

    op.create_table('user',
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('last_seen_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('locale', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=True),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_table('turn',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('user_id', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('session_id', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('user_text', sa.Text(), nullable=False),
    sa.Column('reply', sa.Text(), nullable=True),
    sa.Column('lang', sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('answered_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('cache_hit', sa.Boolean(), nullable=False),
    sa.Column('meta', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['user.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('turn', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_turn_created_at'), ['created_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_turn_session_id'), ['session_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_turn_user_id'), ['user_id'], unique=False)

    op.create_table('fact',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('user_id', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('turn_id', sa.Integer(), nullable=True),
    sa.Column('slot', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('key', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('value', sa.Float(), nullable=True),
    sa.Column('value2', sa.Float(), nullable=True),
    sa.Column('text_value', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
    sa.Column('unit', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True),
    sa.Column('cui', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=True),
    sa.Column('tui', sqlmodel.sql.sqltypes.AutoString(length=8), nullable=True),
    sa.Column('confidence', sa.Float(), nullable=False),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('mentions', sa.Integer(), nullable=False),
    sa.Column('first_seen_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('observed_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('superseded', sa.Boolean(), nullable=False),
    sa.ForeignKeyConstraint(['turn_id'], ['turn.id'], ),
    sa.ForeignKeyConstraint(['user_id'], ['user.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('fact', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_fact_key'), ['key'], unique=False)
        batch_op.create_index(batch_op.f('ix_fact_observed_at'), ['observed_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_fact_slot'), ['slot'], unique=False)
        batch_op.create_index(batch_op.f('ix_fact_user_id'), ['user_id'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('fact', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_fact_user_id'))
        batch_op.drop_index(batch_op.f('ix_fact_slot'))
        batch_op.drop_index(batch_op.f('ix_fact_observed_at'))
        batch_op.drop_index(batch_op.f('ix_fact_key'))

    op.drop_table('fact')
    with op.batch_alter_table('turn', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_turn_user_id'))
        batch_op.drop_index(batch_op.f('ix_turn_session_id'))
        batch_op.drop_index(batch_op.f('ix_turn_created_at'))

    op.drop_table('turn')
    op.drop_table('user')
    with op.batch_alter_table('cacheentry', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_cacheentry_question_key'))
        batch_op.drop_index(batch_op.f('ix_cacheentry_owner_user_id'))
        batch_op.drop_index(batch_op.f('ix_cacheentry_last_used_at'))

    op.drop_table('cacheentry')
