"""Emergency triage: red flags in both languages, suppression rules, and the gate in the graph
(before the cache and any model call; the turn's facts still stored). The first triage's tests, with its
nine labels renamed to the current category ids (``chest_pain`` -> ``cardiac_chest_pain``, ...;
its "worst headache" case is now ``thunderclap_headache``)."""

from __future__ import annotations

import pytest

from core.messages import InboundMessage
from core.memory.view import profile_view
from core.safety import emergency_reply, red_flags
from bot.bench.fake_llm import FakeOpenAIServer
from tests.conftest import make_settings


@pytest.mark.parametrize("text,category", [
    ("가슴이 쥐어짜듯 아프고 식은땀이 나요", "cardiac_chest_pain"),
    ("가슴 통증이 왼팔로 퍼져요", "cardiac_chest_pain"),
    ("crushing chest pain going down my left arm", "cardiac_chest_pain"),
    ("엄마 얼굴 한쪽이 처지고 말이 어눌해요", "stroke"),
    ("suddenly can't lift my right arm and my speech is slurred", "stroke"),
    ("갑자기 머리가 깨질 듯이 아파요 인생 최악이에요", "thunderclap_headache"),
    ("가만히 있어도 숨이 차고 입술이 파래요", "airway_breathing"),
    ("I can't breathe", "airway_breathing"),
    ("피를 토했어요", "major_bleeding"),
    ("the bleeding won't stop after 30 minutes of pressure", "major_bleeding"),
    ("아버지가 쓰러지셨어요", "collapse"),
    ("my mom just passed out", "collapse"),
    ("아이가 경련을 해요", "seizure"),
    ("he is having a seizure right now", "seizure"),
    ("벌에 쏘였는데 목이 부어서 숨쉬기 힘들어요", "anaphylaxis"),
    ("my throat is closing up after eating shrimp", "anaphylaxis"),
    ("죽고 싶어요", "suicide_self_harm"),
    ("I don't want to be here anymore, I want to end my life", "suicide_self_harm"),
    ("수면제를 한꺼번에 20알 먹었어요", "poisoning_overdose"),
    ("I took a whole bottle of tylenol", "poisoning_overdose"),
])
def test_red_flags_in_both_languages(text, category):
    assert category in [f.category for f in red_flags(text)]


@pytest.mark.parametrize("text", [
    "가슴 통증은 없어요",                      # negated
    "no chest pain or shortness of breath",
    "뇌졸중 증상이 뭐예요?",                   # general question
    "what are the warning signs of a heart attack?",
    "how do I know if someone is having a stroke?",  # hypothetical
    "3년 전에 기절한 적이 있어요",              # past, not now
    "I had a seizure as a child, none since",
    "운동하면 조금 숨이 차요",                 # mild
    "타이레놀 하루 최대 용량이 얼마예요?",
    "small cut on my finger, it stopped bleeding",
    "메트포르민 부작용이 뭔가요?",
])
def test_non_emergencies_are_not_flagged(text):
    assert red_flags(text) == []


def test_reply_names_the_configured_numbers_in_the_users_language():
    ko = emergency_reply(red_flags("가슴이 쥐어짜듯 아파요"), "ko", emergency="112")
    assert "112" in ko and "전화" in ko and "119" not in ko
    en = emergency_reply(red_flags("I want to kill myself"), "en", emergency="911", crisis="988")
    assert "988" in en and "911" in en and "crisis" in en
    with pytest.raises(ValueError):
        emergency_reply([], "ko")


def _nodes(reply):
    return [n["node"] for n in reply.trace["nodes"]]


def test_emergency_skips_cache_retrieval_and_llm_but_stores_facts(tmp_path, default_index):
    with FakeOpenAIServer() as server:
        settings = make_settings(tmp_path, default_index, OPENAI_API_KEY="k",
                                 OPENAI_BASE_URL=server.base_url, LLM_MODEL="fake")
        from core.agent import Agent

        agent = Agent(settings)
        text = "저는 67세 남자고 당뇨가 있어요. 가슴이 쥐어짜듯 아프고 식은땀이 나요"
        reply = agent.handle(InboundMessage(user_id="t:er", text=text))
        assert server.requests == []  # no LLM call, not even the judge
    assert _nodes(reply) == ["triage", "extract_slots", "store_memory", "store_response"]
    assert reply.trace["red_flags"][0]["category"] == "cardiac_chest_pain"
    assert reply.trace["llm_calls"] == 0 and reply.trace["retrieval"] is None
    assert "119" in reply.text and reply.sources == []
    view = profile_view(agent.services.repo, "t:er")
    names = {f["name"] for f in view["facts"]}
    assert "diabetes mellitus" in names and view["turns"] == 1
    turn = agent.services.repo.recent_turns("t:er", 1)[0]
    assert turn.reply == reply.text and turn.meta["red_flags"]
    assert len(agent.services.cache) == 0  # an emergency reply is never cached


def test_emergency_reply_survives_a_failing_store(agent, monkeypatch):
    def broken(*_a, **_k):
        raise RuntimeError("database went away")

    monkeypatch.setattr(agent.services.repo, "save_facts", broken)
    reply = agent.handle(InboundMessage(user_id="t:er2", text="I can't breathe and my lips are blue"))
    assert "119" in reply.text and reply.trace["red_flags"]
