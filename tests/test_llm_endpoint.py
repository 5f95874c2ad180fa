"""The agent with an OpenAI-compatible endpoint: the real ``openai`` client talks to the loopback
fake server (bot/bench/fake_llm.py). Nothing of our own code is replaced."""

from __future__ import annotations

import json
import socket

import numpy as np
import pytest

from conftest import make_settings
from core.answer import prompts
from core.agent import Agent
from core.messages import InboundMessage, OutboundMessage
from core.services import make_embedder
from core.language.tokens import count_tokens
from bot.bench.fake_llm import EMBEDDING_DIM, FakeOpenAIServer, fake_embedding

PROFILE_MSG = "저는 65세 남성이고 10년째 당뇨병이 있어요. 메트포르민을 먹고 있어요."
MED_Q = "제가 먹는 약의 부작용이 뭔가요?"
GENERIC_Q = "운동은 일주일에 얼마나 해야 하나요?"


@pytest.fixture
def server():
    with FakeOpenAIServer(require_key="sk-test") as srv:
        yield srv


def llm_agent(tmp_path, index, base_url: str, **env) -> Agent:
    return Agent(make_settings(tmp_path, index, OPENAI_BASE_URL=base_url, LLM_MODEL="fake-model",
                               OPENAI_API_KEY="sk-test", **env))


def ask(agent: Agent, user: str, text: str, **kw) -> OutboundMessage:
    return agent.handle(InboundMessage(user_id=user, text=text, **kw))


def nodes(reply: OutboundMessage) -> list[str]:
    return [n["node"] for n in reply.trace["nodes"]]


def chats(srv: FakeOpenAIServer) -> list[dict]:
    return [r["json"] for r in srv.requests_to("/chat/completions")]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def verified(*flags: bool) -> str:
    """The verification reply: one boolean per claim."""
    return json.dumps({"supported": list(flags)})


def test_answer_and_verification_come_from_the_llm(tmp_path, default_index, server):
    agent = llm_agent(tmp_path, default_index, server.base_url)
    user = "llm:u1"
    ask(agent, user, PROFILE_MSG)
    server.clear()

    answer = "드시는 메트포르민의 흔한 부작용은 설사 같은 위장 증상이에요 [1]."
    server.script_chat(answer, verified(True))
    reply = ask(agent, user, MED_Q)

    assert reply.text.startswith(answer)
    assert prompts.DISCLAIMER["ko"] in reply.text
    assert reply.trace["generator"] == "llm"
    assert reply.sources

    reqs = chats(server)
    assert len(reqs) == 2, reqs
    gen, check = reqs
    assert gen["model"] == "fake-model"
    system, user_msg = gen["messages"]
    assert system == {"role": "system", "content": prompts.SYSTEM["ko"] + "\n\n" + prompts.QUOTED_DATA["ko"]}
    assert user_msg["role"] == "user"
    for needle in ("65세", "남성", "당뇨병", "메트포르민"):  # the profile, quoted in the user message
        assert needle in user_msg["content"], needle
    content = user_msg["content"]
    assert content.startswith("<evidence>")  # evidence first, then profile and memory, then the question
    assert content.index("</evidence>") < content.index("<patient_profile>") < content.index("<question>")
    assert reply.sources[0].title in content
    assert content.endswith(f"<question>\n{MED_Q}\n</question>")
    assert "response_format" not in gen

    # the verification extends the answer's messages unchanged: a prompt cache serves the prefix
    assert check["messages"][:2] == gen["messages"]
    assert check["messages"][2] == {"role": "assistant", "content": answer}
    assert check["messages"][3]["content"].startswith(prompts.VERIFY["ko"])
    assert answer in check["messages"][3]["content"]
    assert check["response_format"]["type"] == "json_schema"
    assert check["response_format"]["json_schema"]["schema"]["properties"]["supported"]["maxItems"] == 1
    assert all(r["headers"]["authorization"] == "Bearer sk-test"
               for r in server.requests_to("/chat/completions"))

    q, v = reply.trace["quality"], reply.trace["verification"]
    assert q["method"] == "checker:endpoint" and q["grounding"] == 1.0
    assert v["backend"] == "endpoint" and v["claims"] == 1 and v["failed"] == 0 and v["calls"] == 1
    assert reply.trace["refine_stop_reason"].startswith("verified")
    assert reply.trace["llm_calls"] == 2


def test_malformed_verification_reply_falls_back_to_offline_features(tmp_path, default_index, server):
    agent = llm_agent(tmp_path, default_index, server.base_url)
    answer = "운동은 주 150분 정도의 중강도 유산소 운동이 권장돼요 [1]."
    server.script_chat(answer, "not json at all", json.dumps({"rewrites": [""]}))
    reply = ask(agent, "llm:u2", GENERIC_Q)

    assert reply.trace["generator"] == "llm"
    v = reply.trace["verification"]
    assert "malformed" in v["note"]
    assert v["verdicts"][0].get("llm") is None  # no model verdict: the offline model alone decided
    assert reply.trace["refine_iterations"] == 0


def test_http_500_once_is_retried(tmp_path, default_index, server):
    agent = llm_agent(tmp_path, default_index, server.base_url)
    answer = "운동은 주 150분 정도가 권장돼요 [1]."
    server.script_chat(500, answer, verified(True))
    reply = ask(agent, "llm:u3", GENERIC_Q)

    assert reply.text.startswith(answer)
    assert reply.trace["generator"] == "llm"
    assert not any("LLM failed" in n for n in reply.trace["notes"])
    reqs = chats(server)
    assert len(reqs) == 3, [r.get("response_format") for r in reqs]
    assert reqs[0] == reqs[1]  # the failed request was sent again, unchanged
    assert reqs[2]["response_format"]["type"] == "json_schema"
    assert reply.trace["quality"]["method"] == "checker:endpoint"
    assert reply.trace["verification"]["failed"] == 0


def test_a_failed_sentence_is_repaired_alone_in_one_call(tmp_path, default_index, server):
    agent = llm_agent(tmp_path, default_index, server.base_url)
    good = "운동은 주 150분 정도의 중강도 유산소 운동이 권장돼요 [1]."
    bad = "근력 운동은 절대 하지 마세요 [1]."
    server.script_chat(f"{good} {bad}", verified(True, False), json.dumps({"rewrites": [""]}))
    reply = ask(agent, "llm:u4", GENERIC_Q)

    reqs = chats(server)
    assert len(reqs) == 3 and reply.trace["llm_calls"] == 3
    check, repair = reqs[1], reqs[2]
    assert repair["messages"][:4] == check["messages"]  # extends the verification unchanged
    assert repair["messages"][4]["role"] == "assistant"
    assert repair["messages"][5]["content"] == prompts.REPAIR["ko"].format(numbers="2")
    assert repair["response_format"]["json_schema"]["schema"]["properties"]["rewrites"]["maxItems"] == 1
    assert good in reply.text and bad not in reply.text  # the failed sentence alone was dropped
    assert reply.trace["repair"]["dropped"] == 1 and reply.trace["repair"]["calls"] == 1
    assert reply.trace["verification"]["failed"] == 1


def test_missing_evidence_re_retrieves_then_repairs_with_the_new_evidence(tmp_path, default_index, server):
    agent = llm_agent(tmp_path, default_index, server.base_url)
    good = "운동은 주 150분 정도의 중강도 유산소 운동이 권장돼요 [1]."
    bad = "하루 9,731보를 걸으면 당뇨병이 완치돼요 [1]."  # a number no document states
    server.script_chat(f"{good} {bad}", verified(True, False), json.dumps({"rewrites": [""]}))
    reply = ask(agent, "llm:u5", GENERIC_Q, flags={"dynamic_query_rewrite": False})

    reqs = chats(server)
    assert len(reqs) == 3, [r["messages"][-1]["content"][:60] for r in reqs]
    assert reply.trace["refine_iterations"] == 1  # one re-retrieval, no second answer
    assert bad.split(" [")[0] in reply.trace["retrieval"]["query"]
    repair = reqs[2]
    assert repair["messages"][:4] == reqs[1]["messages"]
    assert repair["messages"][5]["content"].startswith(prompts.MORE_EVIDENCE["ko"])
    assert "<evidence>" in repair["messages"][5]["content"]
    assert bad not in reply.text and good in reply.text


def test_endpoint_down_answers_offline_and_stores_the_turn(tmp_path, default_index):
    base_url = f"http://127.0.0.1:{closed_port()}/v1"
    agent = llm_agent(tmp_path, default_index, base_url, LLM_MAX_RETRIES=1, LLM_TIMEOUT_S=5)
    user = "llm:down"
    reply = ask(agent, user, "메트포르민 부작용이 뭔가요?")

    assert reply.trace["generator"] == "offline"
    assert any(n.startswith("LLM failed") for n in reply.trace["notes"]), reply.trace["notes"]
    assert reply.sources and "[1]" in reply.text
    assert prompts.DISCLAIMER["ko"] in reply.text
    assert "error" not in reply.trace
    repo = agent.services.repo
    assert repo.count_turns(user) == 1
    turn = repo.recent_turns(user, 1)[0]
    assert turn.user_text == "메트포르민 부작용이 뭔가요?" and turn.reply == reply.text


def test_endpoint_failing_beyond_retries_answers_offline(tmp_path, default_index, server):
    agent = llm_agent(tmp_path, default_index, server.base_url, LLM_MAX_RETRIES=1)
    server.script_chat(500, 500)  # the answer request and its one retry
    reply = ask(agent, "llm:u4", "메트포르민 부작용이 뭔가요?",
                flags={"self_refine_enabled": False})
    assert reply.trace["generator"] == "offline"
    assert any(n.startswith("LLM failed") for n in reply.trace["notes"])
    assert "[1]" in reply.text and reply.sources
    assert len(server.requests_to("/chat/completions")) >= 2
    assert agent.services.repo.count_turns("llm:u4") == 1


def test_baseline_mode_with_endpoint(tmp_path, default_index, server):
    agent = llm_agent(tmp_path, default_index, server.base_url)
    ask(agent, "llm:base", PROFILE_MSG, mode="llm")
    server.clear()
    server.script_chat("BASELINE 답변입니다.")
    reply = ask(agent, "llm:base", MED_Q, mode="llm")

    assert reply.text.startswith("BASELINE 답변입니다.")
    assert reply.trace["generator"] == "llm"
    assert "retrieve" not in nodes(reply)
    assert reply.sources == []
    reqs = chats(server)
    assert len(reqs) == 1  # no judge, no refine in the baseline
    system = reqs[0]["messages"][0]["content"]
    assert "근거 문서" not in system and "[1]" not in system
    assert "메트포르민" not in system and "65세" not in system  # no profile either
    assert reqs[0]["messages"][-1]["content"] == MED_Q


def test_baseline_mode_without_endpoint_refuses_politely(agent):
    reply = ask(agent, "offline:base", "메트포르민 부작용이 뭔가요?", mode="llm")
    assert reply.trace["generator"] == "none"
    assert "엔드포인트" in reply.text
    assert reply.sources == []
    assert "[1]" not in reply.text and not any(l.startswith("- ") for l in reply.text.splitlines())
    assert "설사" not in reply.text
    assert "retrieve" not in nodes(reply)
    assert agent.services.repo.count_turns("offline:base") == 1


def test_embeddings_through_the_endpoint(tmp_path, default_index, server):
    settings = make_settings(tmp_path, default_index, OPENAI_BASE_URL=server.base_url,
                             OPENAI_API_KEY="sk-test", EMBEDDING_BACKEND="openai",
                             EMBEDDING_MODEL="fake-embed")
    emb = make_embedder(settings)
    assert emb.dim == EMBEDDING_DIM
    assert emb.name == "openai/fake-embed"
    v = emb.embed_query("메트포르민 부작용")
    assert v.shape == (EMBEDDING_DIM,) and v.dtype == np.float32
    assert np.linalg.norm(v) == pytest.approx(1.0, abs=1e-5)
    assert np.allclose(v, np.asarray(fake_embedding("메트포르민 부작용"), dtype=np.float32), atol=1e-5)
    m = emb.embed_passages(["혈압 약", "blood pressure medicine", "x"])
    assert m.shape == (3, EMBEDDING_DIM)
    assert np.allclose(np.linalg.norm(m, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(m[0], m[1])
    reqs = server.requests_to("/embeddings")
    assert reqs and all(r["json"]["model"] == "fake-embed" for r in reqs)


def test_openai_embedder_over_e5_index_reports_mismatch(tmp_path, default_index, server):
    settings = make_settings(tmp_path, default_index, OPENAI_BASE_URL=server.base_url,
                             OPENAI_API_KEY="sk-test", EMBEDDING_BACKEND="openai",
                             EMBEDDING_MODEL="fake-embed")
    agent = Agent(settings)
    reply = ask(agent, "emb:u", "메트포르민 부작용이 뭔가요?")
    assert "지식 색인을 불러올 수 없어요" in reply.text
    assert "openai/fake-embed" in reply.text  # says which embedder does not match
    assert "error" in reply.trace
    assert agent.services.repo.count_turns("emb:u") == 1
    assert agent.services.repo.recent_turns("emb:u", 1)[0].user_text == "메트포르민 부작용이 뭔가요?"


def test_long_message_is_truncated_in_every_llm_request(tmp_path, default_index, server):
    agent = llm_agent(tmp_path, default_index, server.base_url, MAX_QUESTION_TOKENS=50)
    head = "운동은 일주일에 얼마나 해야 하나요? 혈압이 높은 편이라 걱정이에요. " * 6
    text = head + "TAILMARKER " * 40
    assert count_tokens(head) > 50
    reply = ask(agent, "llm:long", text)
    assert "50" in reply.text.split("\n")[0]  # the user is told only the first 50 tokens were used
    reqs = chats(server)
    assert len(reqs) >= 2  # the answer and the judge
    for body in reqs:
        assert "TAILMARKER" not in json.dumps(body, ensure_ascii=False), body["messages"][0]["content"][:80]


def test_an_answer_with_no_supported_sentence_left_falls_back_to_the_quoted_evidence(tmp_path, default_index, server):
    from core.llm.offline import FRAMING_PREFIXES

    agent = llm_agent(tmp_path, default_index, server.base_url)
    bad = "근력 운동은 절대 하지 마세요 [1]."
    server.script_chat(bad, verified(False), json.dumps({"rewrites": [""]}))
    reply = ask(agent, "llm:u6", GENERIC_Q)

    assert bad not in reply.text
    assert reply.text.startswith(FRAMING_PREFIXES[0])  # the offline answer's opening: quotes follow
    assert "[1]" in reply.text and prompts.DISCLAIMER["ko"] in reply.text
    assert any("stands in" in n for n in reply.trace["notes"])
