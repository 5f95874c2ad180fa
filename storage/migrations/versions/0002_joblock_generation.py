"""Infrastructure tables: joblock (named leases of the scheduled jobs) and generation
(a counter per resource, bumped on deletes, e.g. of cache entries).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 05:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = '0002'
down_revision: str | None = '0001'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('generation',
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('value', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('name')
    )
    op.create_table('joblock',
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=120), nullable=False),
    sa.Column('owner', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('acquired_at', sa.Float(), nullable=False),
    sa.Column('expires_at', sa.Float(), nullable=False),
    sa.PrimaryKeyConstraint('name')
    )


def downgrade() -> None:
    op.drop_table('joblock')
    op.drop_table('generation')
