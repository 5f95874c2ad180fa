"""erasure tombstones; audit pseudonyms keyed

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 09:00:00.000000

Adds ``erasuretombstone`` (SPEC.md §11 "Privacy"). Audit rows written before this revision name users by an
unkeyed ``sha256:`` hash, which is reversed by hashing candidate ids; the original ids are not
known here, so each such value (in ``subject_hash`` and ``actor``) is replaced by
``legacy:`` + HMAC-SHA256 under a random key that is used once and never stored: rows of the
same legacy subject still match one another, and nothing maps them back to an id. The
downgrade cannot restore the old hashes.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision: str = '0005'
down_revision: str | None = '0004'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('erasuretombstone',
    sa.Column('subject_hash', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('epoch', sa.Integer(), nullable=False),
    sa.Column('erased_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('subject_hash')
    )
    _rekey_legacy_audit_hashes()


def _rekey_legacy_audit_hashes() -> None:
    conn = op.get_bind()
    audit = sa.table('auditlog', sa.column('subject_hash', sa.String), sa.column('actor', sa.String))
    key = secrets.token_bytes(32)  # used for this upgrade only, then forgotten

    def pseudonym(old: str) -> str:
        return "legacy:" + hmac.new(key, old.encode("utf-8"), hashlib.sha256).hexdigest()[:32]

    for column in (audit.c.subject_hash, audit.c.actor):
        olds = conn.execute(sa.select(column).where(column.like('sha256:%')).distinct()).scalars().all()
        for old in olds:
            conn.execute(sa.update(audit).where(column == old).values({column.name: pseudonym(old)}))


def downgrade() -> None:
    op.drop_table('erasuretombstone')
