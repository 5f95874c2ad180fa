"""Bad input never crashes a turn: empty, huge, binary, letterless messages and a missing index
all get a polite reply, and the user's words are stored."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import make_settings
from core.agent import Agent
from core.messages import InboundMessage, OutboundMessage
from core.language.text import sanitize
from core.language.tokens import count_tokens, truncate_tokens


def ask(agent: Agent, user: str, text: str, **kw) -> OutboundMessage:
    return agent.handle(InboundMessage(user_id=user, text=text, **kw))


@pytest.mark.parametrize("text", ["", "   ", " \n\t \n "])
def test_empty_message_gets_a_polite_reply(agent, text):
    reply = ask(agent, "bad:empty", text)
    assert "비어 있어요" in reply.text
    assert reply.sources == []
    assert reply.trace.get("rejected") == "empty"


def test_empty_message_in_english_locale(agent):
    reply = ask(agent, "bad:empty-en", "  ", locale="en")
    assert reply.lang == "en" and "empty" in reply.text.lower()


def test_20000_character_message_is_answered_and_stored_whole(agent, settings):
    sentence = "메트포르민을 먹으면 어떤 부작용이 생길 수 있는지 궁금해요. "
    text = (sentence * 1000)[:19990].rstrip()
    text += "요" * (20000 - len(text))
    assert len(text) == 20000 and sanitize(text) == text
    n = settings.max_question_tokens
    assert count_tokens(text) > n

    user = "bad:long"
    reply = ask(agent, user, text)
    first = reply.text.split("\n")[0]
    assert f"{n} 토큰" in first, first  # says only the first N tokens were used
    assert "error" not in reply.trace
    assert reply.sources and "[1]" in reply.text  # and still answers from the evidence
    assert reply.trace["prompt_sections"]["question"] == truncate_tokens(text, n)
    turns = agent.services.repo.recent_turns(user, 5)
    assert len(turns) == 1
    assert turns[0].user_text == text  # all 20,000 characters


def test_long_message_is_embedded_only_up_to_the_token_limit(tmp_path, default_index, embedder):
    agent = Agent(make_settings(tmp_path, default_index, MAX_QUESTION_TOKENS=50))
    head = "운동은 일주일에 얼마나 해야 하나요? 숨이 조금 찰 정도로 걷는 게 좋은지 궁금해요. " * 4
    tail = "Asthma inhalers and COPD flare-ups in winter, spirometry results and oxygen. " * 30
    text = (head + tail).strip()
    reply = ask(agent, "bad:embed", text, locale="ko")
    assert "50 토큰" in reply.text.split("\n")[0]
    vectors = agent.services.repo.all_cache_vectors(agent.services.embedder.name)
    assert len(vectors) == 1, "precondition: the answer was cached with its question vector"
    stored = np.frombuffer(vectors[0][1], dtype=np.float32)
    used = embedder.embed_query(truncate_tokens(text, 50))
    assert float(stored @ used) > 0.999


@pytest.mark.parametrize("text", [
    bytes(range(256)).decode("latin-1"),
    "\udcff\x00\x01",
    "\x00\x01\x02 혈압 \udcff 질문\x7f",
])
def test_binary_garbage_gets_a_polite_reply_and_is_stored(agent, text):
    user = "bad:binary"
    reply = ask(agent, user, text)
    assert reply.text.strip()
    assert "error" not in reply.trace, reply.trace
    assert agent.services.repo.count_turns(user) == 1
    stored = agent.services.repo.recent_turns(user, 1)[0].user_text
    assert "\x00" not in stored
    stored.encode("utf-8")  # valid UTF-8: no lone surrogates reached the database


@pytest.mark.parametrize("text", ["1234567890", "😀😀😀", "120 / 80 !!! 😷"])
def test_message_without_letters_gets_a_polite_reply(agent, text):
    user = "bad:noletters"
    reply = ask(agent, user, text)
    assert "글자를 읽을 수 없는" in reply.text
    assert reply.sources == []
    assert reply.trace.get("rejected") == "no letters"
    assert agent.services.repo.recent_turns(user, 1)[0].user_text == text


def test_missing_index_directory_gets_a_clear_reply(tmp_path):
    missing = tmp_path / "no-such-index"
    agent = Agent(make_settings(tmp_path, missing))
    user = "bad:noindex"
    reply = ask(agent, user, "메트포르민 부작용이 뭔가요?")
    assert "지식 색인을 불러올 수 없어요" in reply.text
    assert str(missing) in reply.text
    assert "error" in reply.trace
    assert not missing.exists()  # an explicitly chosen index is never built behind the user's back
    turns = agent.services.repo.recent_turns(user, 5)
    assert [t.user_text for t in turns] == ["메트포르민 부작용이 뭔가요?"]
    # a greeting needs no index and still works
    assert "안녕하세요" in ask(agent, user, "안녕하세요").text
