"""The evidence-selection conversation, replayed: a 58-year-old woman on amlodipine with morning headaches
and a blood pressure of 160/100 asks whether her medication can make her legs swell (Korean and
English). Offline, on the bundled corpus."""

from __future__ import annotations

import re

import pytest

from core.messages import InboundMessage

PROFILE = ["58세 여성이에요. 고혈압이 있어서 암로디핀을 먹고 있어요.",
           "아침마다 머리가 아파요. 오늘 혈압이 160/100이었어요."]
OEDEMA = {"ko": "가장 흔한 부작용은 발목과 발이 붓는 것으로",
          "en": "The most common side effect is swelling of the ankles and feet"}
OFF_TOPIC_DOCS = re.compile(r"kb-(osteoporosis|dyslipidemia|pregnancy)-")
OFF_TOPIC_WORDS = re.compile(r"골다공증|비스포스포네이트|데노수맙|중성지방|콜레스테롤|임신|임산부|"
                             r"osteopor|bisphosphonate|denosumab|triglycerid|cholesterol|pregnan", re.I)


BULLET = re.compile(r"^- (?P<body>.+?) \[(?P<n>\d+)\](?: \(.+\))?$")


def bullets(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("- ")]


@pytest.fixture(scope="module")
def chunks_by_doc(default_index) -> dict[str, list[str]]:
    from core.retrieval.index import HybridIndex

    out: dict[str, list[str]] = {}
    for c in HybridIndex(default_index, None).chunks:
        out.setdefault(c["doc_id"], []).append(c["text"])
    return out


@pytest.fixture
def her(agent):
    user = "console:u58"
    for text in PROFILE:
        agent.handle(InboundMessage(user_id=user, text=text))
    return lambda text: agent.handle(InboundMessage(user_id=user, text=text))


def test_the_bundled_corpus_has_the_oedema_sentence_in_both_languages(chunks_by_doc):
    assert any(OEDEMA["ko"] in t for t in chunks_by_doc["kb-medications-ko-012"])
    assert any(OEDEMA["en"] in t for t in chunks_by_doc["kb-medications-en-012"])


@pytest.mark.parametrize("lang, question", [("ko", "제가 먹는 약 때문에 다리가 부을 수 있나요?"),
                                            ("en", "Can my medication make my legs swell?")])
def test_leg_swelling_answer_quotes_the_amlodipine_oedema_sentence(her, lang, question):
    reply = her(question)
    lines = bullets(reply.text)
    assert reply.trace["generator"] == "offline"
    assert any(OEDEMA[lang] in line for line in lines), reply.text
    assert not any(OFF_TOPIC_WORDS.search(line) for line in lines), reply.text
    assert not any(OFF_TOPIC_DOCS.match(s.doc_id) for s in reply.sources), reply.sources
    assert "filled in the user's medication" in " ".join(reply.trace["notes"])
    assert "amlodipine" in reply.trace["retrieval"]["query"]


@pytest.mark.parametrize("question", ["아침에 두통이 있는 이유는 뭔가요?", "Why do I get headaches in the morning?",
                                      "아침마다 머리가 아픈데 왜 그런가요?"])
def test_headache_question_gets_no_pregnancy_warning_signs(her, question):
    reply = her(question)
    lines = bullets(reply.text)
    assert lines, reply.text
    assert not any(re.search(r"임신|임산부|양수|태동|pregnan", line, re.I) for line in lines), reply.text
    assert not any(s.doc_id.startswith("kb-pregnancy-") for s in reply.sources)


def test_a_question_not_about_her_gets_no_profile_term_in_retrieval(her):
    reply = her("운동은 일주일에 얼마나 해야 하나요?")
    query = reply.trace["retrieval"]["query"]
    assert "암로디핀" not in query and "amlodipine" not in query and "고혈압" not in query
    assert "no reference to the user's own medication or condition" in " ".join(reply.trace["notes"])


def test_every_bullet_quotes_its_cited_source(her, chunks_by_doc):
    for q in ("제가 먹는 약 때문에 다리가 부을 수 있나요?", "Can my medication make my legs swell?",
              "아침에 두통이 있는 이유는 뭔가요?"):
        reply = her(q)
        for line in bullets(reply.text):
            m = BULLET.match(line)
            assert m, line
            doc_id = reply.sources[int(m.group("n")) - 1].doc_id
            assert any(m.group("body") in t for t in chunks_by_doc[doc_id]), (line, doc_id)


def test_what_does_my_value_mean_states_her_value_in_the_template_and_quotes_ranges(her):
    reply = her("혈압 160/100이면 어떤 건가요?")
    assert reply.trace["qtype"]["label"] == "test_result"
    assert "말씀하신 수치: 혈압 160/100 mmHg." in reply.text
    lines = bullets(reply.text)
    assert any(re.search(r"\d+\s*mmHg|\d+/\d+", line) for line in lines), reply.text  # a range quoted


def test_a_dosage_question_quotes_dosing(her):
    reply = her("메트포르민은 하루에 몇 mg 먹어요?")
    assert reply.trace["qtype"]["label"] == "dosage"
    assert any("mg" in line for line in bullets(reply.text)), reply.text
    assert "말씀하신 수치" not in reply.text  # the value template is for test_result questions only
