"""End-to-end behaviour of the offline agent: the five-turn acceptance script, memory across a
restart, the response cache, the refine-loop guards, per-request flags, and grounding of the
offline answers. No LLM endpoint: everything runs on the bundled corpus index."""

from __future__ import annotations

import re
from collections import defaultdict

import pydantic
import pytest

from core.answer import prompts
from core.agent import Agent
from core.memory.view import profile_view
from core.messages import InboundMessage, OutboundMessage
from core.retrieval.index import HybridIndex
from core.language.text import question_key
from bot.bench.turn import FIVE_TURNS

CUI = re.compile(r"^C\d{7}$")
HANGUL = re.compile(r"[\uac00-\ud7a3]")
BULLET = re.compile(r"^- (?P<body>.+?) \[(?P<n>\d+)\]"
                    r"(?: \((?:영문 자료 인용|quoted from a Korean source)\))?$")

SCRIPT = FIVE_TURNS  # the acceptance script, shared with `medbot bench turn`
GENERIC_Q = "운동은 일주일에 얼마나 해야 하나요?"
MED_Q = "제가 먹는 약의 부작용이 뭔가요?"


def ask(agent: Agent, user: str, text: str, **kw) -> OutboundMessage:
    return agent.handle(InboundMessage(user_id=user, text=text, **kw))


def nodes(reply: OutboundMessage) -> list[str]:
    return [n["node"] for n in reply.trace["nodes"]]


def facts_by_key(view: dict) -> dict[tuple[str, str], dict]:
    return {(f["slot"], f["key"]): f for f in view["facts"]}


def concept(view: dict, slot: str, word: str) -> dict | None:
    return next((f for f in view["facts"] if f["slot"] == slot and word in f["name"].lower()), None)


@pytest.fixture(scope="module")
def chunks_by_doc(default_index) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for c in HybridIndex(default_index, None).chunks:
        out[c["doc_id"]].append(c["text"])
    return out


def bullets(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("- ")]


def assert_grounded(reply: OutboundMessage, chunks_by_doc: dict[str, list[str]]) -> None:
    """Every bullet of an offline answer is a verbatim quote of the document it cites."""
    assert reply.trace["generator"] in ("offline", "cache")
    lines = bullets(reply.text)
    assert lines, f"no evidence bullets in: {reply.text!r}"
    for line in lines:
        m = BULLET.match(line)
        assert m, f"bullet without a citation: {line!r}"
        n = int(m.group("n"))
        assert 1 <= n <= len(reply.sources), f"[{n}] cites no source: {line!r}"
        doc_id = reply.sources[n - 1].doc_id
        texts = chunks_by_doc[doc_id]
        assert texts, f"unknown document {doc_id}"
        assert any(m.group("body") in t for t in texts), \
            f"bullet {line!r} is not a quote of its cited document {doc_id}"


# -- the acceptance script ---------------------------------------------------------------------

def test_five_turn_acceptance_script(agent, chunks_by_doc):
    user = "console:accept"
    repo = agent.services.repo

    r1 = ask(agent, user, SCRIPT[0])
    assert r1.trace["intent"]["label"] == "greeting"
    assert r1.trace["retrieval_skipped"] is True
    assert "retrieve" not in nodes(r1)
    assert "안녕하세요" in r1.text and r1.sources == []

    r2 = ask(agent, user, SCRIPT[1])
    view = profile_view(repo, user)
    facts = facts_by_key(view)
    assert facts[("demographics", "age")]["value"] == 65
    assert facts[("demographics", "sex")]["value"] == "male"
    diabetes = concept(view, "condition", "diabetes")
    assert diabetes is not None, view["facts"]
    assert CUI.match(diabetes["cui"]) and diabetes["key"] == diabetes["cui"]
    metformin = concept(view, "medication", "metformin")
    assert metformin is not None, view["facts"]
    assert CUI.match(metformin["cui"])
    assert r2.trace["retrieval_skipped"] is False

    ask(agent, user, SCRIPT[2])
    bp = facts_by_key(profile_view(repo, user))[("vital", "blood_pressure")]
    assert (bp["value"], bp["value2"], bp["unit"]) == (150, 95, "mmHg")

    ask(agent, user, SCRIPT[3])
    facts = facts_by_key(profile_view(repo, user))
    fg, a1c = facts[("lab", "fasting_glucose")], facts[("lab", "hba1c")]
    assert (fg["value"], fg["unit"]) == (180, "mg/dL")
    assert (a1c["value"], a1c["unit"]) == (pytest.approx(8.2), "%")

    r5 = ask(agent, user, SCRIPT[4])
    assert "메트포르민" in r5.text
    assert any(w in line for line in bullets(r5.text) for w in ("설사", "구역", "부작용")), r5.text
    assert re.search(r"\[1\]", r5.text)
    assert r5.sources
    first = r5.sources[0].title
    assert "메트포르민" in first or "metformin" in first.lower(), first
    profile = r5.trace["prompt_sections"]["profile"]
    for needle in ("65", "남성", "당뇨", "메트포르민", "150/95", "180", "8.2"):
        assert needle in profile, (needle, profile)
    assert_grounded(r5, chunks_by_doc)
    assert repo.count_turns(user) == 5


def test_memory_survives_restart(settings, agent):
    user = "console:restart"
    for text in SCRIPT[1:4]:
        ask(agent, user, text)
    before = profile_view(agent.services.repo, user)

    again = Agent(settings)  # a new process over the same SQLite file
    after = profile_view(again.services.repo, user)
    assert after["summary"] == before["summary"] and after["summary"]
    assert [(f["slot"], f["key"], f.get("value")) for f in after["facts"]] == \
        [(f["slot"], f["key"], f.get("value")) for f in before["facts"]]

    reply = ask(again, user, MED_Q)
    dialogue = reply.trace["prompt_sections"]["dialogue"]
    for text in SCRIPT[1:4]:
        assert text in dialogue, (text, dialogue)
    assert "메트포르민" in reply.trace["prompt_sections"]["profile"]
    assert again.services.repo.count_turns(user) == 4


def test_every_turn_is_stored_whatever_the_path(agent):
    user = "console:paths"
    repo = agent.services.repo
    assert repo.count_turns(user) == 0

    r = ask(agent, user, "안녕하세요")
    assert r.trace["intent"]["label"] == "greeting"
    assert repo.count_turns(user) == 1

    # without the dialogue in the prompt the answer holds nothing of the user: a shared entry
    # (with the dialogue it is the user's own, and the next turn's dialogue differs)
    r = ask(agent, user, GENERIC_Q, flags={"include_history": False})
    assert "retrieve" in nodes(r)
    assert repo.count_turns(user) == 2

    r = ask(agent, user, GENERIC_Q, flags={"include_history": False})
    assert r.trace["cache_hit"] is not None
    assert repo.count_turns(user) == 3

    r = ask(agent, user, "감사합니다")
    assert r.trace["intent"]["label"] == "acknowledgement"
    assert repo.count_turns(user) == 4

    turns = repo.recent_turns(user, 10)
    assert [t.user_text for t in turns] == ["안녕하세요", GENERIC_Q, GENERIC_Q, "감사합니다"]
    assert all(t.reply for t in turns)
    assert [t.cache_hit for t in turns] == [False, False, True, False]


# -- response cache ----------------------------------------------------------------------------

def test_response_cache_generic_and_personalised(agent):
    repo = agent.services.repo

    a1 = ask(agent, "cache:A", GENERIC_Q)
    assert profile_view(repo, "cache:A")["facts"] == []  # a generic question, nothing to store
    assert a1.trace["cache_hit"] is None and "retrieve" in nodes(a1)

    a2 = ask(agent, "cache:A", GENERIC_Q)
    assert a2.trace["cache_hit"] is not None and a2.trace["cache_hit"]["kind"] == "exact"
    assert "retrieve" not in nodes(a2)
    assert a2.text == a1.text

    b = ask(agent, "cache:B", GENERIC_Q)
    assert b.trace["cache_hit"] is not None and b.trace["cache_hit"]["kind"] == "exact"
    assert "retrieve" not in nodes(b)
    assert b.text == a1.text
    assert [s.doc_id for s in b.sources] == [s.doc_id for s in a1.sources]

    # A personalised answer (C has a profile) is cached for C only.
    ask(agent, "cache:C", "저는 당뇨병이 있어요")
    c1 = ask(agent, "cache:C", MED_Q)
    assert c1.trace["cache_hit"] is None
    assert "참고한 회원님 정보" in c1.text
    owners = [e.owner_user_id for e in repo.cache_by_key(question_key(MED_Q), agent.services.embedder.name)]
    assert "cache:C" in owners  # it was cached, as a personalised entry

    d = ask(agent, "cache:D", MED_Q)
    assert d.trace["cache_hit"] is None
    assert "retrieve" in nodes(d)
    assert d.text != c1.text
    assert "참고한 회원님 정보" not in d.text and "당뇨" not in d.text.split("\n\n")[0]


def test_personalised_entry_is_served_to_its_owner_only_while_profile_unchanged(agent):
    # Without the dialogue in the prompt the profile is C's only content (SPEC.md §11 "Privacy": an owned
    # answer is served while the user content it used is unchanged; each turn changes the
    # dialogue, so with history on a repeated question is answered anew).
    off = {"include_history": False}
    ask(agent, "cache:C", "저는 당뇨병이 있어요", flags=off)
    c1 = ask(agent, "cache:C", MED_Q, flags=off)
    assert c1.trace["cache_hit"] is None
    c2 = ask(agent, "cache:C", MED_Q, flags=off)
    assert c2.trace["cache_hit"] is not None and c2.trace["cache_hit"]["shared"] is False
    assert c2.text == c1.text
    ask(agent, "cache:C", "요즘 혈압이 150/95 정도 나와요", flags=off)  # the profile changes
    c3 = ask(agent, "cache:C", MED_Q, flags=off)
    assert c3.trace["cache_hit"] is None
    assert "retrieve" in nodes(c3)
    assert "150/95" in c3.text  # the new profile is used


def test_self_referential_question_is_not_answered_with_another_users_generic_entry(agent):
    d = ask(agent, "cache:D", MED_Q)  # no profile: cached as a generic answer
    assert d.trace["cache_hit"] is None
    ask(agent, "cache:F", "저는 메트포르민을 먹고 있어요")
    f = ask(agent, "cache:F", MED_Q)
    assert re.search(r"참고한 회원님 정보: .*메트포르민", f.text), f.text
    assert f.trace["cache_hit"] is None


def test_facts_in_a_message_served_from_the_cache_are_stored(agent):
    repo = agent.services.repo
    text = "혈압 150/95. " + GENERIC_Q  # a reading, but nothing that could identify anyone:
    # a generic entry may serve it (a stated age or sex would make the answer A's own).
    # A's answer holds nothing of A (no profile, no history in the prompt): a shared entry
    # whose key (concepts, question type, polarity, the numbers 150 and 95) equals E's.
    first = ask(agent, "cache:A", text, flags={"include_profile": False, "include_history": False})
    assert first.trace["cache_hit"] is None

    hit = ask(agent, "cache:E", text)
    assert hit.trace["cache_hit"] is not None, hit.trace
    assert hit.trace["cache_hit"]["kind"] == "exact"
    assert "retrieve" not in nodes(hit)
    assert hit.text == first.text
    facts = facts_by_key(profile_view(repo, "cache:E"))
    assert (facts[("vital", "blood_pressure")]["value"], facts[("vital", "blood_pressure")]["value2"]) == (150, 95)
    assert repo.count_turns("cache:E") == 1
    assert repo.recent_turns("cache:E", 1)[0].user_text == text


# -- refine loop guards and per-request flags --------------------------------------------------

def test_refine_loop_is_bounded(agent):
    reply = ask(agent, "refine:u", "혈압이 높으면 어떤 운동이 좋은가요?",
                flags={"quality_threshold": 1.0, "response_cache_enabled": False})
    t = reply.trace
    assert 0 <= t["refine_iterations"] <= 2
    assert t["refine_stop_reason"]
    assert re.match(r"(verified|max_iterations|no_improvement|doc_overlap)", t["refine_stop_reason"])
    assert nodes(reply).count("retrieve") == t["refine_iterations"] + 1
    assert len(t["quality_history"]) in (t["refine_iterations"], t["refine_iterations"] + 1)
    assert reply.text.strip()


def test_self_refine_disabled(agent):
    reply = ask(agent, "refine:v", "혈압이 높으면 어떤 운동이 좋은가요?",
                flags={"self_refine_enabled": False})
    assert reply.trace["refine_stop_reason"] == "self_refine_disabled"
    assert reply.trace["refine_iterations"] == 0
    assert nodes(reply).count("retrieve") == 1
    assert reply.trace["quality"]  # the answer was still scored


def test_per_request_retrieval_mode_bm25(agent):
    reply = ask(agent, "flags:u", "메트포르민 부작용이 뭔가요?", flags={"retrieval_mode": "bm25"})
    r = reply.trace["retrieval"]
    assert r["mode"] == "bm25"
    assert r["dense_hits"] == 0
    assert r["bm25_hits"] > 0
    # the same general question is now a generic cache entry, so the cache is off for the rerun
    hybrid = ask(agent, "flags:w", "메트포르민 부작용이 뭔가요?", flags={"response_cache_enabled": False})
    assert hybrid.trace["retrieval"]["mode"] == "hybrid"
    assert hybrid.trace["retrieval"]["dense_hits"] > 0


@pytest.mark.parametrize("flags", [{"no_such_flag": True}, {"max_refine_iterations": 99},
                                   {"retrieval_mode": "telepathy"}])
def test_bad_flags_raise_validation_error(agent, flags):
    with pytest.raises(pydantic.ValidationError):
        ask(agent, "flags:bad", "메트포르민 부작용이 뭔가요?", flags=flags)


def test_graph_and_services_are_built_once(agent):
    graph, services = agent.graph, agent.services
    ask(agent, "once:u", "안녕하세요")
    index = services.index()
    ask(agent, "once:u", "메트포르민 부작용이 뭔가요?")
    assert agent.graph is graph
    assert agent.services is services
    assert services.index() is index


# -- grounding and framing of offline answers --------------------------------------------------

@pytest.mark.parametrize("question", [
    "메트포르민 부작용이 뭔가요?",
    "뇌졸중 증상은 무엇인가요?",
    "How can I lower my blood pressure?",
])
def test_offline_answers_only_quote_their_sources(agent, chunks_by_doc, question):
    reply = ask(agent, "ground:u", question)
    assert reply.trace["generator"] == "offline"
    assert_grounded(reply, chunks_by_doc)
    assert prompts.DISCLAIMER[reply.lang] in reply.text


def test_disclaimer_in_every_non_greeting_answer(agent):
    user = "disclaimer:u"
    for text in SCRIPT:
        reply = ask(agent, user, text)
        if reply.trace["intent"]["label"] == "greeting":
            continue
        assert prompts.DISCLAIMER["ko"] in reply.text, (text, reply.text)


def test_english_question_gets_english_framing(agent, chunks_by_doc):
    reply = ask(agent, "english:u", "What are the common side effects of metformin?")
    assert reply.lang == "en" and reply.trace["lang"] == "en"
    assert prompts.DISCLAIMER["en"] in reply.text
    assert prompts.DISCLAIMER["ko"] not in reply.text
    framing = [line for line in reply.text.splitlines() if line and not line.startswith("- ")]
    assert framing
    for line in framing:
        assert not HANGUL.search(line), f"Korean framing in an English answer: {line!r}"
    assert_grounded(reply, chunks_by_doc)
