"""What an operator sees: ``/metrics`` (Prometheus text, prometheus_client multiprocess mode),
``/readyz``, JSON logs, on a real ``medbot run`` in webhook mode driven through the loopback
Telegram server and LLM.

One process serves the module: five users each send a message with words of their own; the
metrics page then holds the turns by channel and outcome, node and LLM histograms (buckets up to
600 s), and not one user id or word of theirs; every stderr line is one JSON object, the turn
lines carry turn id, channel, node timings and outcome, and no line at INFO or above holds a
word of the messages. ``REDIS_URL`` points at a closed port, so ``/readyz`` says 503 and names
Redis (and the turns are still answered: the front desk serves without Redis). At SIGTERM the
process folds its metric files into the archives.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from bot.bench.fake_llm import FakeOpenAIServer
from conftest import CACHE
from fakes.telegram_server import FakeTelegramServer
from test_cli import MEDBOT, medbot_env
from test_crash_recovery import _free_port

WORDS = ["zanzibarite", "quokkafoil", "marmalune", "pelicanthe", "tundrabell"]
USERS = [880_001 + i for i in range(len(WORDS))]


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture(scope="module")
def served(tmp_path_factory, default_index):
    """A ``medbot run`` that answered five users; yields its metrics page, readiness, its
    stderr lines after SIGTERM, and the multiprocess directory."""
    tmp = tmp_path_factory.mktemp("observability")
    prom = tmp / "prom"
    prom.mkdir()
    port = _free_port()
    with FakeTelegramServer() as tg, FakeOpenAIServer(delay_s=0.05) as llm:
        env = medbot_env(tmp, default_index)
        env.update(TELEGRAM_BOT_TOKEN="1:A", TELEGRAM_API_URL=tg.base_url,
                   TELEGRAM_WEBHOOK_URL=f"http://127.0.0.1:{port}/tg", PORT=str(port),
                   HTTP_HOST="127.0.0.1", MEDCAT_PACKS_DIR=str(CACHE / "medcat"),
                   OPENAI_BASE_URL=llm.base_url, OPENAI_API_KEY="sk-test", LLM_MODEL="fake-model",
                   VERIFY_BACKEND="endpoint",  # the verification kind counted below
                   LOG_LEVEL="INFO", LOG_FORMAT="json", PROMETHEUS_MULTIPROC_DIR=str(prom),
                   REDIS_URL=f"redis://127.0.0.1:{_free_port()}/0")
        proc = subprocess.Popen([MEDBOT, "run"], env=env, cwd=tmp, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        try:
            tg.wait_for(lambda f: bool(f.webhook) or proc.poll() is not None, 180)
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            for uid, word in zip(USERS, WORDS):
                update = tg.make_update(uid, uid, f"What is {word}? I take metformin for diabetes.")
                assert tg.deliver_webhook(update) == 200
            tg.wait_for(lambda f: all(f.sent(u) for u in USERS), 180)
            _status, page = _get(f"http://127.0.0.1:{port}/metrics")
            ready = _get(f"http://127.0.0.1:{port}/readyz")
            pid = proc.pid
            proc.send_signal(signal.SIGTERM)
            _out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
    yield {"page": page, "ready": ready, "lines": err.splitlines(), "prom": prom, "pid": pid,
           "code": proc.returncode}


def test_metrics_count_turns_nodes_and_llm_calls(served):
    page = served["page"]
    assert 'medbot_turns_total{channel="telegram",outcome="answer"} 5.0' in page
    assert 'medbot_turn_duration_seconds_bucket{channel="telegram",le="600.0",outcome="answer"} 5.0' in page
    assert 'medbot_node_duration_seconds_count{node="generate_answer"} 5.0' in page
    assert 'medbot_node_duration_seconds_bucket{le="300.0",node="triage"} 5.0' in page
    assert 'medbot_llm_calls_total{kind="answer",outcome="ok"} 5.0' in page
    assert 'medbot_llm_calls_total{kind="verify",outcome="ok"} 5.0' in page  # one per answer
    assert 'gen_ai_client_operation_duration_seconds_count{error_type="",gen_ai_operation_name="chat",' \
           'gen_ai_request_model="fake_model",kind="answer"} 5.0' in page
    assert 'gen_ai_client_token_usage_count{gen_ai_operation_name="chat",gen_ai_request_model="fake_model",' \
           'gen_ai_token_type="input",kind="verify"} 5.0' in page
    assert "medbot_cache_lookups_total 5.0" in page
    assert 'medbot_messages_total{channel="telegram",result="accepted"} 5.0' in page
    assert f'medbot_turns_in_flight{{pid="{served["pid"]}"}} 0.0' in page  # per process
    assert f'medbot_queue_depth{{pid="{served["pid"]}"}} 0.0' in page


def test_metrics_hold_no_user_id_and_no_word_of_a_message(served):
    page = served["page"]
    for uid, word in zip(USERS, WORDS):
        assert str(uid) not in page and word not in page
    assert "metformin" not in page and "diabetes" not in page


def test_readyz_names_the_failing_part(served):
    status, body = served["ready"]
    data = json.loads(body)
    assert status == 503 and data["failing"] == ["redis"]
    assert data["checks"]["database"]["ok"] and data["checks"]["index"]["ok"]


def test_json_logs_one_object_per_line_with_turn_fields_and_no_message_text(served):
    records = [json.loads(line) for line in served["lines"] if line.strip()]  # each line is JSON
    turns = [r for r in records if "turn_id" in r and "outcome" in r]
    assert len(turns) == 5
    for r in turns:
        assert r["channel"] == "telegram" and r["outcome"] == "answer" and r["level"] == "INFO"
        assert {"triage", "generate_answer", "store_response"} <= set(r["nodes"])
        assert all(isinstance(ms, (int, float)) for ms in r["nodes"].values())
    loud = [json.dumps(r, ensure_ascii=False) for r in records
            if r.get("level") in ("INFO", "WARNING", "ERROR", "CRITICAL")]
    assert loud
    for line in loud:
        assert not any(w in line for w in WORDS + ["metformin", "diabetes"]), line


def test_sigterm_folds_the_process_files_into_the_archives(served):
    assert served["code"] == 0
    names = sorted(p.name for p in served["prom"].iterdir() if p.suffix == ".db")
    assert names == ["counter_archive.db", "histogram_archive.db"], names
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(served["prom"])}
    out = subprocess.run([sys.executable, "-c", "from core.telemetry.exposition import render;"
                          "print(render()[0].decode())"], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert 'medbot_turns_total{channel="telegram",outcome="answer"} 5.0' in out
    assert "medbot_turns_in_flight" not in out  # no gauge of a dead process


_CHILD = """
import os, signal, sys
from core.telemetry import metrics
metrics.TURNS.labels("telegram", "answer").inc(3)
metrics.TURN_SECONDS.labels("telegram", "answer").observe(1.5)
metrics.IN_FLIGHT.inc()
if sys.argv[1] == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_process_files_are_folded_by_the_next_sweep(tmp_path):
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    for how in ("kill", "kill"):
        subprocess.run([sys.executable, "-c", _CHILD, how], env=env)
    assert len(list(tmp_path.glob("counter_*.db"))) == 2
    code = ("from core.telemetry.exposition import sweep_dead, render; from core.frontdesk.recovery import pid_alive;"
            "n = sweep_dead(pid_alive); print(n); print(render()[0].decode())")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert out.splitlines()[0] == "6"  # counter, histogram and live gauge file of each
    assert 'medbot_turns_total{channel="telegram",outcome="answer"} 6.0' in out
    assert 'medbot_turn_duration_seconds_count{channel="telegram",outcome="answer"} 2.0' in out
    assert "medbot_turns_in_flight{" not in out
    assert sorted(p.name for p in tmp_path.glob("*.db")) == ["counter_archive.db", "histogram_archive.db"]


def test_labels_never_take_free_text():
    from core.telemetry.metrics import llm_kind, safe_label, turn_outcome
    from core.answer import prompts

    assert safe_label("telegram") == "telegram"
    assert safe_label("What is my blood pressure?") == "other"
    assert safe_label("telegram:12345") == "other"
    assert safe_label("anaphylaxis", ["anaphylaxis"]) == "anaphylaxis"
    assert safe_label("stroke?", ["anaphylaxis"]) == "other"
    answer = [{"role": "system", "content": prompts.SYSTEM["en"]}, {"role": "user", "content": "q"}]
    assert llm_kind(answer) == "answer"
    verify = answer + [{"role": "assistant", "content": "a [1]"},
                       {"role": "user", "content": prompts.VERIFY["ko"] + "\n<sentences>1. a</sentences>"}]
    assert llm_kind(verify) == "verify"
    repair = verify + [{"role": "assistant", "content": '{"supported": [false]}'},
                       {"role": "user", "content": prompts.REPAIR["en"].format(numbers="1")}]
    assert llm_kind(repair) == "repair"
    assert llm_kind([{"role": "system", "content": prompts.REWRITE}]) == "rewrite"
    assert llm_kind([{"role": "system", "content": "You are a helpful assistant"}]) == "answer"
    assert turn_outcome({"red_flags": [{"category": "stroke"}]}) == "emergency"
    assert turn_outcome({"cache_hit": {"entry_id": 1}}) == "cache_hit"
    assert turn_outcome({"rejected": "empty"}) == "refused"


def test_readiness_in_process(tmp_path):
    import redis

    from core.telemetry.readiness import readiness
    from storage.db import make_engine

    engine = make_engine(f"sqlite:///{tmp_path / 'r.db'}")
    ok, body = readiness(engine)
    assert ok and body["failing"] == []
    closed = redis.Redis(port=_free_port(), socket_connect_timeout=1)
    t0 = time.monotonic()
    ok, body = readiness(engine, closed)
    assert not ok and body["failing"] == ["redis"] and time.monotonic() - t0 < 5
    assert "ConnectionError" in body["checks"]["redis"]["detail"]
