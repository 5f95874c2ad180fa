"""The sentence-level faithfulness checker (core.verification): claims, offline features, the
calibrated offline back end on the errors it must catch, the endpoint's log-odds, the repair's
splice, and the agent dropping a sentence that cites no document (through the loopback
OpenAI-compatible server, whose replies the test controls)."""

from __future__ import annotations

import json

import pytest

from bot.bench.fake_llm import FakeOpenAIServer
from conftest import make_settings
from core.llm.client import LLMReply
from core.messages import InboundMessage
from core.verification import calibration as cal
from core.verification.claims import cited_numbers, split_claims
from core.verification.endpoint import boolean_odds, parse_verdicts
from core.verification.features import concept_check, negation_mismatch, number_checks, numbers
from core.verification.offline import OfflineChecker
from core.verification.repair import splice

METFORMIN = ("Metformin is taken by mouth with meals to reduce stomach upset. Labels for immediate-release "
             "tablets typically start at 500 mg once or twice daily and increase gradually.")


def test_claims_keep_citations_and_skip_framing():
    answer = ("Here is what the retrieved sources say about your question.\n\n- Take it with meals [1].\n"
              "- **Start** at 500 mg [1][2].\n\nNote: this is general medical information and does not "
              "replace advice from your doctor or pharmacist. For emergency symptoms, call your local "
              "emergency number now.")
    claims = split_claims(answer)
    assert [(c.plain, c.cited) for c in claims] == [("Take it with meals.", (1,)), ("Start at 500 mg.", (1, 2))]
    assert cited_numbers("A [1]. B [2, 3] and [3][4].") == [1, 2, 3, 4]


def test_numbers_units_names_and_negation():
    assert numbers("하루 두 번 500mg, 2,000 mg/dL, 7.0% twice, 제2형") == [
        ("500", "mg"), ("2000", "mg/dl"), ("7", "%"), ("2", ""), ("2", "times"), ("2", "times")]
    assert number_checks("Start at 1,000 mg twice daily.", METFORMIN) == (1, 0)
    assert number_checks("Start at 500 g once daily.", METFORMIN) == (0, 1)
    assert concept_check("메트포르민은 식사와 함께 드세요.", METFORMIN) == 0  # the same CUI in Korean
    assert concept_check("Glipizide is taken with meals.", METFORMIN) == 1
    assert negation_mismatch("Metformin is not taken with meals.", [METFORMIN])
    assert not negation_mismatch("Take metformin with meals.", [METFORMIN])
    assert negation_mismatch("항생제는 감기의 회복을 앞당깁니다.",
                             ["항생제는 바이러스에 효과가 없어 감기나 독감의 회복을 앞당기지 못하고 부작용만 늘립니다."])


@pytest.mark.parametrize("wrong", [
    "Immediate-release metformin usually starts at 1,000 mg three times daily [1].",  # changed dose
    "Metformin is not taken with meals [1].",  # dropped / added "not"
    "Glipizide is taken by mouth with meals to reduce stomach upset [1].",  # sibling drug
])
def test_offline_checker_catches_a_changed_dose_a_flipped_not_and_a_sibling_drug(embedder, wrong):
    checker = OfflineChecker(embedder)
    right = "Metformin is taken with meals to reduce stomach upset [1]."
    ok, bad = checker.check(f"{right} {wrong}", [METFORMIN]).verdicts
    assert ok.supported and not bad.supported and bad.p < ok.p
    assert bad.reasons


def test_a_citation_of_no_document_fails(embedder):
    v = OfflineChecker(embedder).check("Metformin is taken with meals [7].", [METFORMIN]).verdicts[0]
    assert not v.supported and "cites no evidence document that exists" in v.reasons


def test_shipped_calibrations_are_traceable():
    off = cal.load("offline")
    assert off.features == cal.OFFLINE_FEATURES and len(off.trained_on["sha256"]) == 64
    assert off.trained_on["n"] >= 200
    end = cal.load("endpoint")
    assert end.features == cal.ENDPOINT_FEATURES and end.coef[0] > 0  # the model's own verdict counts


def test_endpoint_log_odds_come_from_the_boolean_tokens():
    reply = LLMReply('{"supported": [true, false]}', 10, 8, 1.0,
                     tokens=['{"', 'supported', '":', ' [', 'true', ',', ' false', ']}'],
                     top_logprobs=[{}, {}, {}, {}, {"true": -0.2, "false": -1.8}, {}, {" false": -0.1, " true": -3.0}, {}])
    odds = boolean_odds(reply, 2)
    assert odds[0] == pytest.approx(1.6) and odds[1] == pytest.approx(-2.9)
    assert boolean_odds(LLMReply("x", 1, 1, 1.0), 2) == [None, None]
    assert parse_verdicts('```json\n{"supported": [true, false]}\n```', 2) == [True, False]
    assert parse_verdicts('{"supported": [true]}', 2) is None


def test_splice_rewrites_or_drops_exactly_the_named_sentences():
    answer = "- Take it with meals [1].\n- It cures diabetes [1].\n- Start low [1]."
    assert splice(answer, {"It cures diabetes [1].": ""}) == "- Take it with meals [1].\n- Start low [1]."
    assert splice(answer, {"Start low [1].": "Start at 500 mg [1]."}).endswith("- Start at 500 mg [1].")


def test_the_agent_drops_a_sentence_citing_no_document(tmp_path, default_index):
    from core.agent import Agent

    with FakeOpenAIServer(require_key="sk-test") as server:
        agent = Agent(make_settings(tmp_path, default_index, OPENAI_BASE_URL=server.base_url,
                                    LLM_MODEL="fake-model", OPENAI_API_KEY="sk-test"))
        user = "llm:cite"
        server.script_chat("ok")
        agent.handle(InboundMessage(user_id=user, text="58세 여성이고 암로디핀을 먹고 있어요."))
        server.clear()
        good, bad = "가장 흔한 부작용은 발목과 발이 붓는 것입니다 [1].", "이 약은 골다공증 골절을 예방합니다 [9]."
        server.script_chat(f"{good} {bad}", json.dumps({"supported": [True, True]}), json.dumps({"rewrites": [""]}))
        reply = agent.handle(InboundMessage(user_id=user, text="제가 먹는 약 때문에 다리가 부을 수 있나요?"))
    gen, check = [r["json"] for r in server.requests_to("/chat/completions")][:2]
    prompt = " ".join(m["content"] for m in gen["messages"])
    assert "[1]" in prompt and "발목과 발이 붓는" in prompt  # the selected evidence feeds the prompt
    assert reply.sources and reply.sources[0].doc_id == "kb-medications-ko-012"
    assert "2. " + bad in check["messages"][-1]["content"]  # both sentences were judged
    # [9] names no document: it fails whatever the model said, and never ships
    assert good in reply.text and bad not in reply.text
    assert reply.trace["verification"]["failed"] == 1 and reply.trace["repair"]["dropped"] == 1


def test_the_users_own_numbers_are_not_unsupported(embedder):
    checker = OfflineChecker(embedder)
    sentence = "Your blood pressure of 150/98 mmHg is above the target of 140/90 mmHg [1]."
    doc = ["Other guidelines define hypertension as 140/90 mmHg or higher."]
    without = checker.check(sentence, doc).verdicts[0]
    with_user = checker.check(sentence, doc, "My blood pressure was 150/98 mmHg.").verdicts[0]
    assert "a number the evidence does not state" in without.reasons and without.missing_evidence
    assert with_user.p > without.p and "a number the evidence does not state" not in with_user.reasons
