"""The ``medbot`` command line, run as real subprocesses (offline: no OPENAI_* variables)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from bot.bench.turn import FIVE_TURNS

MEDBOT = str(Path(sys.executable).parent / "medbot")
SCRIPT = FIVE_TURNS  # the acceptance script, shared with `medbot bench turn`
DROP = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "LLM_MODEL",
        "DATABASE_URL", "REDIS_URL", "EMBEDDING_BACKEND", "EMBEDDING_MODEL", "MEDBOT_LEXICON",
        "MEDBOT_DATA_DIR", "MEDBOT_INDEX_DIR", "TELEGRAM_BOT_TOKEN", "SLACK_BOT_TOKEN",
        "SLACK_APP_TOKEN")


def medbot_env(data_dir: Path, index_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in DROP and not k.startswith("OPENAI_")}
    # as make_settings: the fake endpoint's model has no verification record, so ``auto`` would
    # verify offline; the endpoint back end is asked for (tests/test_verification_choice.py: auto)
    env.update(MEDBOT_DATA_DIR=str(data_dir), MEDBOT_INDEX_DIR=str(index_dir), LOG_LEVEL="WARNING",
               VERIFY_BACKEND="endpoint")
    return env


def medbot(args: list[str], data_dir: Path, index_dir: Path, stdin: str | None = None,
           timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([MEDBOT, *args], input=stdin, capture_output=True, text=True,
                          env=medbot_env(data_dir, index_dir), cwd=data_dir, timeout=timeout)


@pytest.fixture(scope="module")
def five_turns(tmp_path_factory, default_index):
    """The five-turn script as five ``medbot ask`` processes sharing one user and database."""
    data = tmp_path_factory.mktemp("cli-five")
    outs = []
    for i, text in enumerate(SCRIPT):
        args = ["ask", text, "--user", "kim"] + (["--json"] if i in (0, 4) else [])
        proc = medbot(args, data, default_index)
        assert proc.returncode == 0, proc.stderr
        outs.append(proc)
    return data, outs


def test_first_turn_json_skips_retrieval(five_turns):
    _, outs = five_turns
    first = json.loads(outs[0].stdout)
    assert first["trace"]["retrieval_skipped"] is True
    assert "retrieve" not in [n["node"] for n in first["trace"]["nodes"]]
    assert "안녕하세요" in first["text"]


def test_plain_turns_print_answers_with_sources(five_turns):
    _, outs = five_turns
    for proc in outs[1:4]:
        assert "출처 / Sources:" in proc.stdout
        assert "[1]" in proc.stdout
        with pytest.raises(json.JSONDecodeError):
            json.loads(proc.stdout)


def test_fifth_turn_json_has_profile_sources_and_trace(five_turns):
    _, outs = five_turns
    last = json.loads(outs[4].stdout)
    assert "메트포르민" in last["text"]
    assert last["sources"]
    assert all({"n", "doc_id", "title"} <= set(s) for s in last["sources"])
    title = last["sources"][0]["title"]
    assert "메트포르민" in title or "metformin" in title.lower()
    trace = last["trace"]
    profile = trace["prompt_sections"]["profile"]
    for needle in ("65", "남성", "당뇨", "메트포르민", "150/95", "180", "8.2"):
        assert needle in profile, (needle, profile)
    assert trace["nodes"] and all(isinstance(n["ms"], (int, float)) and n["node"] for n in trace["nodes"])
    assert "retrieve" in [n["node"] for n in trace["nodes"]]
    plan = trace["token_plan"]
    assert plan and plan["total"] == 4000 and plan["documents"] > 0
    assert trace["retrieval_skipped"] is False


def test_profile_command_after_the_script(five_turns, default_index):
    data, _ = five_turns
    proc = medbot(["profile", "--user", "kim", "--json"], data, default_index)
    assert proc.returncode == 0, proc.stderr
    view = json.loads(proc.stdout)
    assert view["user_id"] == "console:kim"
    assert view["turns"] == 5
    facts = {(f["slot"], f["key"]): f for f in view["facts"]}
    assert facts[("demographics", "age")]["value"] == 65
    assert facts[("demographics", "sex")]["value"] == "male"
    assert any("diabetes" in f["name"].lower() for f in view["facts"] if f["slot"] == "condition")
    assert any("metformin" in f["name"].lower() for f in view["facts"] if f["slot"] == "medication")
    bp = facts[("vital", "blood_pressure")]
    assert (bp["value"], bp["value2"], bp["unit"]) == (150, 95, "mmHg")
    assert facts[("lab", "fasting_glucose")]["value"] == 180
    assert facts[("lab", "hba1c")]["value"] == pytest.approx(8.2)
    for needle in ("65세", "메트포르민", "150/95", "8.2"):
        assert needle in view["summary"]


def test_chat_five_turns_on_stdin(tmp_path, default_index):
    proc = medbot(["chat", "--user", "V"], tmp_path, default_index,
                  stdin="\n".join(SCRIPT) + "\n/quit\n")
    assert proc.returncode == 0, proc.stderr
    replies = proc.stdout.split("bot> ")[1:]
    assert len(replies) == 5, proc.stdout
    assert "메트포르민" in replies[-1]
    assert "출처 / Sources:" in replies[-1]
    assert "Traceback" not in proc.stderr


def test_ask_with_missing_index_exits_2(tmp_path, default_index):
    proc = medbot(["ask", "x", "--user", "u", "--index", "/nonexistent"], tmp_path, default_index)
    assert proc.returncode == 2
    assert "no index at /nonexistent" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""
