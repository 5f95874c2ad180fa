"""Profile acceptance through the whole agent: whose facts are stored, allergies in every later
prompt, history of superseded values, implausible values asked back, and `medbot profile`."""

from __future__ import annotations

from typer.testing import CliRunner

from core.memory.view import profile_view
from core.messages import InboundMessage


def ask(agent, user, text):
    return agent.handle(InboundMessage(user_id=user, text=text))


def current(agent, user):
    return {(f["slot"], f["name"], f["status"]) for f in profile_view(agent.services.repo, user)["facts"]}


def test_family_history_is_not_the_patients_condition(agent):
    ask(agent, "p:fam", "아버지가 당뇨가 있어요")
    facts = current(agent, "p:fam")
    assert ("condition", "diabetes mellitus", "family") in facts
    assert ("condition", "diabetes mellitus", "active") not in facts
    summary = profile_view(agent.services.repo, "p:fam", "ko")["summary"]
    assert summary == "가족력: 당뇨병"


def test_penicillin_allergy_is_in_every_later_prompt(agent):
    first = ask(agent, "p:pcn", "페니실린 알레르기가 있어요")
    assert ("allergy", "penicillins", "active") in current(agent, "p:pcn")
    assert "알레르기: 페니실린" in first.trace["profile_summary"]
    for text in ("목이 아프고 열이 나요", "항생제 먹어도 되나요?", "How much water should I drink a day?"):
        reply = ask(agent, "p:pcn", text)
        profile_section = reply.trace["prompt_sections"].get("profile", "")
        assert "페니실린" in profile_section or "penicillins" in profile_section, text


def test_negation_and_stopping_change_status_and_keep_history(agent):
    ask(agent, "p:met", "메트포르민 먹고 있어요")
    ask(agent, "p:met", "메트포르민 끊었어요")
    view = profile_view(agent.services.repo, "p:met", "ko")
    assert ("medication", "metformin", "stopped") in current(agent, "p:met")
    assert [h["status"] for h in view["history"] if h["name"] == "metformin"] == ["active"]
    assert "중단한 약: 메트포르민" in view["summary"] and "복용약" not in view["summary"]


def test_new_lab_value_supersedes_and_summary_shows_its_date(agent):
    ask(agent, "p:a1c", "HbA1c 8.2%였어요")
    ask(agent, "p:a1c", "이번에 당화혈색소 7.1%로 내려갔어요")
    view = profile_view(agent.services.repo, "p:a1c", "ko")
    assert [f["value"] for f in view["facts"] if f["key"] == "hba1c"] == [7.1]
    assert [h["value"] for h in view["history"] if h["key"] == "hba1c"] == [8.2]
    assert "HbA1c: 7.1 % (20" in view["summary"]


def test_implausible_values_are_asked_back_not_stored(agent):
    reply = ask(agent, "p:bad", "혈압이 400/20이고 HbA1c 80%예요")
    assert reply.text.startswith("확인 부탁드려요")
    assert "400/20" in reply.text and "HbA1c" in reply.text
    keys = {f["key"] for f in profile_view(agent.services.repo, "p:bad")["facts"]}
    assert not keys & {"blood_pressure", "hba1c"}


def test_other_peoples_numbers_are_not_the_users(agent):
    ask(agent, "p:dad", "저는 40살이고 아버지가 75세이신데 혈압이 170/100이에요")
    keys = {(f["key"], f.get("value")) for f in profile_view(agent.services.repo, "p:dad")["facts"]}
    assert ("age", 40.0) in keys
    assert not any(k == "blood_pressure" for k, _ in keys)


def test_medbot_profile_shows_slots_weights_statuses_and_history(agent, settings, monkeypatch):
    ask(agent, "console:kim", "65세 남자예요. 당뇨가 있고 아버지가 고혈압이에요. 혈압은 150/95")
    ask(agent, "console:kim", "혈압이 132/84로 내려갔어요")
    for key, value in {"MEDBOT_DATA_DIR": str(settings.data_dir),
                       "MEDBOT_INDEX_DIR": str(settings.index_dir)}.items():
        monkeypatch.setenv(key, value)
    from bot.cli import app
    from config.settings import get_settings

    get_settings.cache_clear()
    try:
        out = CliRunner().invoke(app, ["profile", "--user", "kim"])
    finally:
        get_settings.cache_clear()
    assert out.exit_code == 0, out.output
    assert "가족력: 고혈압" in out.output and "family" in out.output
    assert "w=" in out.output and "(history)" in out.output and "150.0/95.0" in out.output
