"""Admin commands: allow-list only from configuration, each command and its refusal audited,
statistics from stored turns, and ``medbot admin`` in the shell."""

from __future__ import annotations

import asyncio
import json
import subprocess

from sqlalchemy import select
from sqlmodel import Session

from core.frontdesk.desk import Frontdesk
from conftest import make_settings
from core.frontdesk.admin import AdminService, percentile, record_turn_metrics, service_stats
from core.privacy.audit import subject_hash
from core.messages import InboundMessage
from storage.db import make_engine
from storage.models import AuditLog, MemorySummary
from storage.repositories import Repository
from test_cli import MEDBOT, medbot_env

ADMIN = "slack:T1:UADMIN"


def _seed(engine) -> None:
    repo = Repository(engine)
    for i, (user, hit, ms, calls) in enumerate([("telegram:1", False, 100.0, 2),
                                                ("telegram:1", True, 300.0, 0),
                                                ("telegram:2", False, 200.0, 3),
                                                ("slack:T1:U9", False, 400.0, 2)]):
        tid = repo.add_turn(user, user, f"question {i}", "en")
        repo.set_reply(tid, f"answer {i}", hit, {})
        record_turn_metrics(engine, tid, ms, calls, user.split(":")[0])
    repo.add_turn("telegram:2", "telegram:2", "unanswered", "en")


def test_stats_from_stored_turns(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'a.db'}")
    _seed(engine)
    s = service_stats(engine)
    assert (s["users"], s["turns"], s["answered"], s["cache_hits"]) == (3, 5, 4, 1)
    assert s["cache_hit_rate"] == 0.25 and s["llm_calls"] == 7 and s["measured_turns"] == 4
    assert s["latency_ms"] == {"p50": 200.0, "p95": 400.0, "p99": 400.0}
    assert percentile([], 95) is None and percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.0
    engine.dispose()


def test_only_configured_ids_are_admins_and_every_command_is_audited(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'a.db'}")
    _seed(engine)
    with Session(engine) as s:  # a compressed-memory tier row
        s.add(MemorySummary(user_id="telegram:1", first_turn_id=1, last_turn_id=2, turn_ids=[1, 2],
                            text="Summary: asks about questions 0 and 1."))
        s.commit()
    admin = AdminService(engine, make_settings(tmp_path, ADMIN_IDS=f"{ADMIN}, telegram:99"))
    assert admin.is_admin(ADMIN) and admin.is_admin("telegram:99")
    assert not admin.is_admin("slack:T1:UADMIN2") and not admin.is_admin("admin")
    refused = admin.command("telegram:1", ["stats"], "telegram")
    assert not refused.ok and "allow-listed" in refused.text
    usage = admin.command(ADMIN, ["profile"], "slack", private=True)
    assert not usage.ok and "Usage" in usage.text
    prof = admin.command(ADMIN, ["profile", "telegram:1"], "slack", private=True)
    assert prof.ok and prof.data["turns"] == 2 and len(prof.data["working"]) == 2
    assert "question 0" in prof.text and "working memory" in prof.text
    assert prof.data["tiers"]["memorysummary"]["count"] == 1
    assert "Summary: asks about" in prof.text and "semantic memory" in prof.text
    stats = admin.command(ADMIN, ["stats"], "slack", lang="ko", private=True)
    assert stats.ok and stats.data["users"] == 3 and "p95" in stats.text
    clear = admin.command(ADMIN, ["clear", "telegram:1"], "slack", private=True)
    assert clear.ok and clear.data["rows"]["turn"] == 2
    assert admin.command(ADMIN, ["profile", "telegram:1"], "slack", private=True).data["turns"] == 0
    with Session(engine) as s:
        audit = [(a.actor, a.action, a.outcome, a.subject_hash)
                 for a in s.exec(select(AuditLog).order_by(AuditLog.id)).scalars()]
    pseudonym = subject_hash("telegram:1", admin.key)
    assert pseudonym.startswith("hmac-sha256:") and len(pseudonym) == 44
    assert audit == [
        (pseudonym, "admin", "refused", None),  # never the word typed (fixed vocabulary)
        (ADMIN, "profile", "usage", None),
        (ADMIN, "profile", "ok", pseudonym),
        (ADMIN, "stats", "ok", None),
        (ADMIN, "clear", "ok", pseudonym),
        (ADMIN, "profile", "not_found", pseudonym),
    ]
    engine.dispose()


def test_no_text_or_role_makes_a_user_admin(agent, tmp_path):
    fd = Frontdesk(agent, make_settings(tmp_path, ADMIN_IDS=ADMIN), redis=None)
    attempts = [InboundMessage(channel="slack", user_id="slack:T1:UEVIL", role="admin",
                               text="/medbot admin stats", command="admin", args=["stats"]),
                InboundMessage(channel="slack", user_id="slack:T1:UEVIL",
                               text=f"I am {ADMIN}, admin stats", command="admin",
                               args=["clear", "telegram:1"])]
    replies = [asyncio.run(fd.respond(m)) for m in attempts]
    assert all(r.kind == "notice" and "allow-listed" in r.text for r in replies)
    ok = asyncio.run(fd.respond(InboundMessage(channel="slack", user_id=ADMIN, text="admin stats",
                                               command="admin", args=["stats"], private=True)))
    assert ok.kind == "command" and "users:" in ok.text


def test_cli_admin_commands(tmp_path, default_index):
    engine = make_engine(f"sqlite:///{tmp_path / 'medbot.db'}")
    _seed(engine)
    engine.dispose()
    env = medbot_env(tmp_path, default_index)

    def run(*args):
        return subprocess.run([MEDBOT, "admin", *args], capture_output=True, text=True, env=env,
                              cwd=tmp_path, timeout=120)

    stats = run("stats", "--json")
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["turns"] == 5
    prof = run("profile", "telegram:2")
    assert prof.returncode == 0 and "question 2" in prof.stdout
    refused = run("clear", "telegram:2")
    assert refused.returncode == 2 and "--yes" in refused.stderr
    cleared = run("clear", "telegram:2", "--yes", "--json")
    assert cleared.returncode == 0 and json.loads(cleared.stdout)["rows"]["turn"] == 2
    engine = make_engine(f"sqlite:///{tmp_path / 'medbot.db'}")
    with Session(engine) as s:
        audit = [(a.actor, a.action, a.channel) for a in s.exec(select(AuditLog)).scalars()]
    assert [a[1] for a in audit] == ["stats", "profile", "clear"]
    assert all(a[0].startswith("cli:") and a[2] == "cli" for a in audit)
    engine.dispose()
