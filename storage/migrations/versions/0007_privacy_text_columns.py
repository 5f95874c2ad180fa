"""privacy: unbounded text columns; hit turns and audit rows keep no user words

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-27 04:25:10

1. Columns whose values come from what users write or from a concept pack become ``TEXT``:
   ``cacheentry.numbers`` (a glucose log of 110 readings did not fit VARCHAR(400) on
   Postgres), ``polarity``, ``soft_polarity``, ``embedder``; ``fact.key``, ``name``,
   ``text_value``, ``unit``, ``cui``, ``tui`` (a licensed MedCAT pack's codes and names have no
   fixed length). SQLite never enforced the lengths; Postgres refused the insert.
2. A cache-hit turn kept the served entry's question (another user's words) and owner in
   ``turn.meta["cache"]``; only the entry id, the match and what the hit saved are kept.
3. Shared cache entries made under the old ownership rule may hold their asker's identifiers
   (the question was not looked at); they are deleted (a cache loses nothing by being emptied)
   and the cache generation is bumped so every process's mirror follows.
4. Audit rows keep only fixed vocabulary: an ``action`` outside it (the word a refused user
   typed after ``/admin``) becomes ``admin``, an unknown ``outcome`` ``error``, an unknown
   ``channel`` ``other`` (:mod:`core.privacy.audit`).

The downgrade restores the column types (values longer than the old lengths are cut on
Postgres); the removed words and entries do not come back.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0007'
down_revision: str | None = '0006'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_WIDENED = {
    'cacheentry': [('embedder', 120, False), ('polarity', 400, False), ('soft_polarity', 200, False),
                   ('numbers', 400, False)],
    'fact': [('key', 64, False), ('name', 200, False), ('text_value', 200, True), ('unit', 32, True),
             ('cui', 16, True), ('tui', 8, True)],
}
HIT_KEYS = ('entry_id', 'kind', 'similarity', 'shared', 'tokens_saved', 'llm_calls_saved',
            'ms_saved', 'style_varied')
"""What a hit turn keeps of its entry (core.nodes.cache.hit_record and the savings)."""
AUDIT_ACTIONS = ('profile', 'clear', 'stats', 'forget', 'admin')
AUDIT_OUTCOMES = ('ok', 'refused', 'error', 'not_found', 'usage', 'not_private')
AUDIT_CHANNELS = ('', 'telegram', 'slack', 'console', 'cli', 'other')


def upgrade() -> None:
    for table, columns in _WIDENED.items():
        with op.batch_alter_table(table, schema=None) as batch_op:
            for name, length, nullable in columns:
                batch_op.alter_column(name, existing_type=sa.VARCHAR(length=length), type_=sa.Text(),
                                      existing_nullable=nullable)
    _strip_hit_meta()
    op.execute("DELETE FROM cacheentry WHERE owner_user_id IS NULL")
    op.execute("UPDATE generation SET value = value + 1 WHERE name = 'cacheentry'")
    _audit_vocabulary()


def _strip_hit_meta() -> None:
    """``turn.meta["cache"]`` of every cache-hit turn down to :data:`HIT_KEYS`."""
    conn = op.get_bind()
    turn = sa.table('turn', sa.column('id', sa.Integer), sa.column('meta', sa.JSON),
                    sa.column('cache_hit', sa.Boolean))
    rows = conn.execute(sa.select(turn.c.id, turn.c.meta).where(turn.c.cache_hit == sa.true())).all()
    for turn_id, meta in rows:
        cache = (meta or {}).get('cache')
        if not isinstance(cache, dict) or set(cache) <= set(HIT_KEYS):
            continue
        kept = {k: v for k, v in cache.items() if k in HIT_KEYS}
        kept.setdefault('shared', cache.get('owner_user_id') is None)
        conn.execute(sa.update(turn).where(turn.c.id == turn_id).values(meta={**meta, 'cache': kept}))


def _audit_vocabulary() -> None:
    audit = sa.table('auditlog', sa.column('action', sa.String), sa.column('outcome', sa.String),
                     sa.column('channel', sa.String))
    for column, allowed, other in ((audit.c.action, AUDIT_ACTIONS, 'admin'),
                                   (audit.c.outcome, AUDIT_OUTCOMES, 'error'),
                                   (audit.c.channel, AUDIT_CHANNELS, 'other')):
        op.execute(sa.update(audit).where(column.not_in(allowed)).values({column.name: other}))


def downgrade() -> None:
    pg = op.get_bind().dialect.name == 'postgresql'
    for table, columns in _WIDENED.items():
        with op.batch_alter_table(table, schema=None) as batch_op:
            for name, length, nullable in columns:
                using = {'postgresql_using': f'left({name}, {length})'} if pg else {}
                batch_op.alter_column(name, existing_type=sa.Text(), type_=sa.VARCHAR(length=length),
                                      existing_nullable=nullable, **using)
