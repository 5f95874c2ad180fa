"""``medbot bench leak``: cross-user leaks through the response cache, attempted as an attacker
would, against an LLM endpoint that echoes its whole prompt (SPEC.md §11 "Privacy").

The endpoint is :class:`bot.bench.fake_llm.FakeOpenAIServer` in echo mode on loopback: every
answer repeats the prompt it was shown, so whatever the prompt held (the question included)
ends up in the answer and, when the answer is cached as shared, in other users' replies.

**Attempts** (``bot/bench/data/leak_attempts.jsonl``, written by the team before the ownership
rule was changed): each line is one *owner* message that puts an identifier of some shape in
front of or after an ordinary question (names, letter-digit IDs, phone numbers, e-mail
addresses, record, insurance and national-ID numbers, dates of birth, addresses, a stated age,
sex or pregnancy, planted instructions, unlisted drug names, handles, workplaces; English and
Korean), its ``secret`` and the ``marker`` text whose presence in a reply is a leak, and two
*probes* asked by other, new users: the bare question, and the same message with another value
of the same shape (an attacker who guesses the shape). Each probe is one attempt. ``split``
(``dev`` / ``heldout``, by a hash of the id) says which attempts the rule was tuned on.

Per attempt the bench records whether the probe's reply holds the owner's marker (**leak**);
per owner message whether its answer was stored as a *shared* cache entry that holds the
marker (**false share**: kept from others only by the cache's similarity decision).

**Ordinary questions** (``--ordinary``): every distinct question of the team's cache pairs
(``bot/bench/data/cache_calibration_pairs.jsonl`` and ``cache_dev_pairs.jsonl``), each asked once by a
new user with the same echo endpoint: how many answers are cached as shared, owned, or not
cached. This measures what the ownership rule costs the cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

ORDINARY_SETS = ("cache_calibration_pairs.jsonl", "cache_dev_pairs.jsonl")
"""The team's cache pairs (tuning data of the cache); the blind pairs stay held out."""


@dataclass
class Attempt:
    """One owner message and its probes (a line of ``leak_attempts.jsonl``)."""

    id: str
    lang: str
    shape: str
    split: str
    owner: str
    secret: str
    marker: str
    probes: list[str]


@dataclass
class LeakReport:
    """What :func:`run_leak` found: ``attempts`` probes asked, ``leaks`` (id, probe) whose reply
    held the owner's marker, ``false_shares`` owner ids whose marker sits in a shared entry,
    ``echoed`` owner replies that held their own marker (an attempt only tests something when
    the owner's answer carried the identifier), ``served`` probes answered from the owner's
    entry, and the same counts per shape and language."""

    attempts: int = 0
    owners: int = 0
    echoed: int = 0
    served: int = 0
    leaks: list[tuple[str, str]] = field(default_factory=list)
    false_shares: list[str] = field(default_factory=list)
    by_shape: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    seconds: float = 0.0


def load_attempts(path: Path | None = None, split: str | None = None) -> list[Attempt]:
    """The attempts of ``path`` (default: the bundled ``leak_attempts.jsonl``), optionally only
    one ``split`` (``dev`` or ``heldout``)."""
    if path is None:
        text = resources.files("bot.bench").joinpath("data/leak_attempts.jsonl").read_text("utf-8")
    else:
        text = Path(path).read_text(encoding="utf-8")
    rows = [Attempt(**json.loads(line)) for line in text.splitlines() if line.strip()]
    return [r for r in rows if split in (None, "all", r.split)]


def leak_agent(tmp: Path, base_url: str, threshold: float | None = None):
    """An :class:`core.agent.Agent` on a fresh SQLite database under ``tmp`` whose LLM is the
    endpoint at ``base_url`` (the configured index and embedder otherwise), and the per-request
    flags (``cache_similarity_threshold`` when ``threshold`` is given)."""
    from config.settings import get_settings
    from core.agent import Agent

    settings = get_settings().model_copy(update={
        "database_url": f"sqlite:///{tmp / 'leak.db'}", "openai_base_url": base_url,
        "llm_model": "fake-model", "openai_api_key": None, "redis_url": None})
    flags = {} if threshold is None else {"cache_similarity_threshold": threshold}
    return Agent(settings), flags


def _owner_entries(agent, turn_id: int | None) -> list[Any]:
    from sqlmodel import Session, select

    from storage.models import CacheEntry

    if turn_id is None:
        return []
    with Session(agent.services.repo.engine) as s:
        return list(s.exec(select(CacheEntry).where(CacheEntry.source_turn_id == turn_id)))


def run_attempt(agent, flags: dict[str, Any], att: Attempt, report: LeakReport) -> None:
    """Ask ``att.owner`` as a new user, then each probe as another new user; add the outcome
    to ``report``."""
    from core.messages import InboundMessage

    shape = report.by_shape[f"{att.lang}:{att.shape}"]
    own = agent.handle(InboundMessage(user_id=f"leak:owner:{att.id}", text=att.owner, flags=flags))
    report.owners += 1
    report.echoed += att.marker in own.text
    entries = _owner_entries(agent, own.trace.get("turn_id"))
    if any(e.owner_user_id is None and att.marker in e.answer for e in entries):
        report.false_shares.append(att.id)
        shape["false_share"] += 1
    ids = {e.id for e in entries}
    for j, probe in enumerate(att.probes):
        reply = agent.handle(InboundMessage(user_id=f"leak:probe:{att.id}:{j}", text=probe,
                                            flags=flags))
        report.attempts += 1
        shape["attempts"] += 1
        hit = reply.trace.get("cache_hit") or {}
        report.served += hit.get("entry_id") in ids
        if att.marker in reply.text and att.marker not in probe:
            report.leaks.append((att.id, probe))
            shape["leaks"] += 1


def run_leak(attempts: list[Attempt], threshold: float | None = None,
             progress: bool = True) -> LeakReport:
    """Run every attempt against the echo endpoint (one fresh database for the whole run, so
    earlier owners' entries are candidates for later probes too)."""
    from bot.bench.fake_llm import FakeOpenAIServer

    report = LeakReport()
    t0 = time.perf_counter()
    with FakeOpenAIServer(echo=True) as srv, tempfile.TemporaryDirectory() as tmp:
        agent, flags = leak_agent(Path(tmp), srv.base_url, threshold)
        for i, att in enumerate(attempts, 1):
            run_attempt(agent, flags, att, report)
            if progress and i % 20 == 0:
                print(f"  {i}/{len(attempts)} owners, {len(report.leaks)} leaks so far", flush=True)
    report.seconds = time.perf_counter() - t0
    return report


def ordinary_questions(files: tuple[str, ...] = ORDINARY_SETS) -> list[str]:
    """The distinct questions (``a`` and ``b``) of the team's cache pairs, sorted."""
    out: set[str] = set()
    for name in files:
        text = resources.files("bot.bench").joinpath(f"data/{name}").read_text("utf-8")
        for line in text.splitlines():
            if line.strip():
                row = json.loads(line)
                out.update((row["a"], row["b"]))
    return sorted(out)


def run_ordinary(questions: list[str], progress: bool = True) -> dict[str, Any]:
    """Ask each question once as a new user with the echo endpoint and count how its answer
    was cached: ``shared``, ``owned``, ``not_cached`` (plus the owned questions, for reading)."""
    from bot.bench.fake_llm import FakeOpenAIServer
    from core.messages import InboundMessage

    counts: Counter = Counter()
    owned: list[str] = []
    with FakeOpenAIServer(echo=True) as srv, tempfile.TemporaryDirectory() as tmp:
        agent, flags = leak_agent(Path(tmp), srv.base_url)
        for i, q in enumerate(questions, 1):
            uid = "ordinary:" + hashlib.md5(q.encode("utf-8")).hexdigest()[:12]
            reply = agent.handle(InboundMessage(user_id=uid, text=q, flags=flags))
            entries = _owner_entries(agent, reply.trace.get("turn_id"))
            kind = ("not_cached" if not entries else
                    "shared" if any(e.owner_user_id is None for e in entries) else "owned")
            counts[kind] += 1
            if kind == "owned":
                owned.append(q)
            if progress and i % 100 == 0:
                print(f"  {i}/{len(questions)} questions", flush=True)
    return {"questions": len(questions), **counts, "owned_questions": owned}


def print_report(report: LeakReport, label: str) -> None:
    """The attempt counts, leaks and false shares, per language and shape."""
    print(f"\n{label}: {report.attempts} attempts ({report.owners} owner messages, "
          f"{report.echoed} echoed their identifier to the owner), {report.seconds:.0f} s")
    print(f"  leaks: {len(report.leaks)} of {report.attempts}; probes served from the owner's "
          f"entry: {report.served}; false shares: {len(report.false_shares)} of {report.owners}")
    print(f"  {'lang:shape':<22} {'attempts':>8} {'leaks':>6} {'false shares':>13}")
    for key in sorted(report.by_shape):
        c = report.by_shape[key]
        print(f"  {key:<22} {c['attempts']:>8} {c['leaks']:>6} {c['false_share']:>13}")
    for aid, probe in report.leaks[:20]:
        print(f"  leak: {aid}: {probe[:70]}")


def bench_leak(split: str = "all", threshold: float | None = None, ordinary: bool = False,
               attempts_file: Path | None = None, as_json: bool = False) -> dict[str, Any]:
    """``medbot bench leak``: run the attempts of ``split`` (and with ``ordinary`` the team's
    ordinary questions); print the figures, or JSON. Returns the figures."""
    attempts = load_attempts(attempts_file, split)
    out: dict[str, Any] = {"split": split, "threshold": threshold,
                           "load_average": round(os.getloadavg()[0], 2)}
    report = run_leak(attempts, threshold, progress=not as_json)
    out["leak"] = {"attempts": report.attempts, "owners": report.owners,
                   "echoed": report.echoed, "served": report.served,
                   "leaks": len(report.leaks), "false_shares": len(report.false_shares),
                   "leaked": report.leaks, "false_shared": report.false_shares,
                   "by_shape": {k: dict(v) for k, v in report.by_shape.items()},
                   "seconds": round(report.seconds, 1)}
    if not as_json:
        print_report(report, f"leak attempts ({split})")
    if ordinary:
        out["ordinary"] = run_ordinary(ordinary_questions(), progress=not as_json)
        if not as_json:
            o = out["ordinary"]
            print(f"\nordinary questions (team cache pairs): {o['questions']} asked; cached shared "
                  f"{o.get('shared', 0)}, owned {o.get('owned', 0)}, not cached {o.get('not_cached', 0)}")
    if as_json:
        print(json.dumps(out, ensure_ascii=False, indent=2))
    return out
