"""An answer built from anything of a user is never served to another (SPEC.md §11).

The LLM endpoint is the loopback fake in echo mode: every answer repeats the whole prompt it
was given, as a model that leaks its context would. The first user tells the bot an unlisted
drug, an INR value, their name and phone number over a few turns, then asks questions; other
users then ask the same questions and paraphrases (with a permissive cosine threshold, so only
ownership can keep the answers apart). None of the first user's details may reach them.
"""

from __future__ import annotations

import pytest

from conftest import make_settings
from core.agent import Agent
from core.messages import InboundMessage
from bot.bench.fake_llm import FakeOpenAIServer

SECRETS = ["Zorbexitol", "조르벡시톨", "INR 3.7", "홍길순", "Kim Minji", "010-4417-2286",
           "+82-10-5521-0934"]

PERSONAL = {
    "ko": ["제 이름은 홍길순이고 전화번호는 010-4417-2286이에요.",
           "요즘 조르벡시톨이라는 약을 먹고 있어요.",
           "지난주 검사에서 INR 3.7이 나왔어요."],
    "en": ["My name is Kim Minji, my phone number is +82-10-5521-0934.",
           "I have been taking a pill called Zorbexitol since March.",
           "My last INR 3.7 came back from the clinic."],
}

QUESTIONS = {
    "ko": [("와파린 부작용이 뭔가요?", "와파린 먹으면 어떤 부작용이 있어요?"),
           ("와파린이랑 아스피린 같이 먹어도 되나요?", "와파린과 아스피린을 함께 복용해도 괜찮나요?"),
           ("고혈압에 좋은 음식은 뭔가요?", "고혈압에 도움이 되는 음식 알려주세요"),
           ("당뇨병 초기 증상이 뭐예요?", "당뇨병 초기에는 어떤 증상이 나타나나요?"),
           ("메트포르민은 식전에 먹나요 식후에 먹나요?", "메트포르민 먹는 시간은 언제가 좋아요?"),
           ("INR 수치는 무엇을 뜻하나요?", "INR 검사는 뭘 측정하는 거예요?"),
           ("통풍은 왜 생기나요?", "통풍의 원인이 뭔가요?")],
    "en": [("What are the side effects of warfarin?", "What side effects does warfarin have?"),
           ("Can I take warfarin with aspirin?", "Is it okay to take warfarin and aspirin together?"),
           ("What foods are good for high blood pressure?", "Which foods help with high blood pressure?"),
           ("What are the early symptoms of diabetes?", "What are the first signs of diabetes?"),
           ("Should I take metformin before or after meals?", "Do I take metformin with food?"),
           ("What does the INR test measure?", "What is an INR test for?"),
           ("What causes gout?", "Why do people get gout?")],
}


@pytest.fixture
def echo_server():
    with FakeOpenAIServer(echo=True) as srv:
        yield srv


def test_no_cross_user_leak_with_an_echoing_llm(tmp_path, default_index, echo_server):
    agent = Agent(make_settings(tmp_path, default_index, OPENAI_BASE_URL=echo_server.base_url,
                                LLM_MODEL="fake-model", OPENAI_API_KEY="sk-test"))

    def ask(user: str, text: str):
        # self-refine off: the checker would drop the echoed profile (no document supports it),
        # and this test needs answers that carry it, as a leaking model's would
        return agent.handle(InboundMessage(user_id=user, text=text,
                                           flags={"cache_similarity_threshold": 0.6,
                                                  "self_refine_enabled": False}))

    leaks, attempts, hits = [], 0, 0
    for lang in ("ko", "en"):
        owner = f"leak:owner:{lang}"
        for text in PERSONAL[lang]:
            ask(owner, text)
        for i, (q, _) in enumerate(QUESTIONS[lang]):
            ask(owner, PERSONAL[lang][i % 3])  # keeps the details in the 5-turn working memory
            own = ask(owner, q)
            assert any(s in own.text for s in SECRETS), (own.trace["generator"], own.text[:1500])
        for i, (q, para) in enumerate(QUESTIONS[lang]):
            for j, text in enumerate((q, para, q, para)):
                reply = ask(f"leak:other:{lang}:{i}:{j}", text)
                attempts += 1
                hits += reply.trace["cache_hit"] is not None
                found = [s for s in SECRETS if s in reply.text]
                if found:
                    leaks.append((text, found))
    assert attempts >= 50
    assert leaks == [], f"{len(leaks)} of {attempts} attempts leaked: {leaks[:3]}"
    assert hits > 0  # the cache did serve the other users (their own shared answers)


# -- a question's own identifiers (names, IDs, phone numbers, age, ...) --------------------------
def test_the_issue_reproduction_insurance_number_does_not_reach_another_user(tmp_path, default_index,
                                                                              echo_server):
    agent = Agent(make_settings(tmp_path, default_index, OPENAI_BASE_URL=echo_server.base_url,
                                LLM_MODEL="fake-model", OPENAI_API_KEY="sk-test"))
    a = agent.handle(InboundMessage(user_id="console:a",
                                    text="My insurance number is AB12345678. What causes gout?"))
    assert "AB12345678" in a.text  # the echoing model repeats the question to its asker
    b = agent.handle(InboundMessage(user_id="console:b", text="What causes gout?"))
    assert "AB12345678" not in b.text
    again = agent.handle(InboundMessage(user_id="console:c", text="What causes gout?"))
    assert again.trace["cache_hit"] is not None  # b's impersonal answer is shared
    assert "AB12345678" not in again.text


def test_identifier_attempts_neither_leak_nor_are_stored_shared(tmp_path, default_index, echo_server):
    """Every fourth of the team's attack messages (each shape, both languages; the full set runs
    in ``medbot bench leak``), each asked by a new user, then its two probes by other users."""
    from bot.bench.leak import LeakReport, load_attempts, run_attempt

    agent = Agent(make_settings(tmp_path, default_index, OPENAI_BASE_URL=echo_server.base_url,
                                LLM_MODEL="fake-model", OPENAI_API_KEY="sk-test"))
    attempts = load_attempts()[::4]
    report = LeakReport()
    for att in attempts:
        run_attempt(agent, {"cache_similarity_threshold": 0.6}, att, report)
    assert report.attempts >= 70 and report.echoed == report.owners  # each carried its identifier
    assert report.false_shares == [], report.false_shares
    assert report.leaks == [], report.leaks
