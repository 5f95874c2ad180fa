"""The five-turn memory compression job (SPEC.md §3.2, §8).

Every block of ``compression_threshold`` (feature flag, SPEC.md §10; default five) answered,
uncompressed turns of a user becomes one :class:`MemorySummary`.
Crash safety and exactly-once come from the store: the summary row and the turns' ``summary_id``
are written in one transaction whose update only touches turns still uncompressed
(:meth:`storage.repositories.Repository.store_summary`), so a worker killed mid-job leaves the
turns as they were, and two workers racing on one block store one summary. A failed or empty
summary is never stored; its turns stay verbatim and are retried on the next run.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from core.extraction import Extractor
from core.jobs import JobResult
from core.llm.client import ChatClient
from core.memory.summarize import TurnText, summarize
from storage.models import MemorySummary
from storage.repositories import Repository

log = logging.getLogger(__name__)

BLOCK = 5  # SPEC.md §3.2: "every 5 turns"; the job uses the compression_threshold flag


@dataclass
class CompressionCounts:
    """What one run did: users visited, summaries stored, turns compressed, blocks skipped
    (lost a race or empty summary), LLM calls."""

    users: int = 0
    summaries: int = 0
    turns: int = 0
    skipped: int = 0
    llm_calls: int = 0
    methods: dict[str, int] = field(default_factory=dict)


def compress_user(repo: Repository, user_id: str, extractor: Extractor, llm: ChatClient | None,
                  counts: CompressionCounts, size: int = BLOCK) -> None:
    """Summarise every full block of the user's uncompressed turns (oldest first)."""
    for block in repo.uncompressed_blocks(user_id, size):
        lang = block[-1].lang or "ko"
        try:
            summary = summarize([TurnText(int(t.id), t.user_text, t.reply) for t in block],  # type: ignore[arg-type]
                                lang, extractor, llm)
        except Exception:  # a failed summary never replaces memory: the turns stay verbatim
            log.exception("summary failed for turns from %s of %s", block[0].id, user_id)
            counts.skipped += 1
            continue
        counts.llm_calls += summary.llm_calls
        if not summary.text.strip():
            counts.skipped += 1
            log.warning("empty summary for turns %s of %s: left uncompressed", block[0].id, user_id)
            continue
        ids = [int(t.id) for t in block]  # type: ignore[arg-type]
        stored = repo.store_summary(MemorySummary(
            user_id=user_id, first_turn_id=ids[0], last_turn_id=ids[-1], turn_ids=ids,
            text=summary.text, tokens=summary.tokens, method=summary.method))
        if stored is None:
            counts.skipped += 1
            continue
        counts.summaries += 1
        counts.turns += len(ids)
        counts.methods[summary.method] = counts.methods.get(summary.method, 0) + 1


def compress_all(repo: Repository, extractor: Extractor, llm: ChatClient | None,
                 size: int = BLOCK) -> CompressionCounts:
    """Compress every user who has at least one full block waiting."""
    counts = CompressionCounts()
    while True:
        users = repo.users_to_compress(size)
        pending = [u for u in users if repo.uncompressed_blocks(u, size)]
        if not pending:
            return counts
        before = counts.summaries
        for user_id in pending:
            counts.users += 1
            compress_user(repo, user_id, extractor, llm, counts, size)
        if counts.summaries == before:  # nothing could be stored (empty or lost races): stop
            return counts


def run_memory_compression(settings) -> JobResult:
    """The ``memory_compression`` job (registered in :mod:`bot.scheduler`).

    Args:
        settings: :class:`config.settings.Settings`: database, LLM endpoint (summaries are the
            LLM's when configured, extractive otherwise), concept table, and the block size
            ``flags.compression_threshold`` (turns per summary).
    Returns:
        JobResult with counts ``users``, ``summaries``, ``turns``, ``skipped``, ``llm_calls``.
    Raises:
        sqlalchemy.exc.OperationalError: the database is unreachable.
    """
    from core.llm.client import make_openai_client
    from core.services import make_extractor
    from storage.db import shared_engine

    t0 = time.perf_counter()
    repo = Repository(shared_engine(settings.resolved_database_url))
    llm = ChatClient(make_openai_client(settings), settings.llm_model) if settings.llm_configured else None
    counts = compress_all(repo, make_extractor(settings), llm, size=settings.flags.compression_threshold)
    return JobResult("memory_compression",
                     {"users": counts.users, "summaries": counts.summaries, "turns": counts.turns,
                      "skipped": counts.skipped, "llm_calls": counts.llm_calls},
                     round((time.perf_counter() - t0) * 1000, 1))
