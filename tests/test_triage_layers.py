"""Triage layers (SPEC.md §11 "Emergency triage"): layer-1 discriminators per category in both languages, third
person, typos and mixed Korean/English; hard negatives and the false alarms the issue names;
layer 2 (the shipped model matches the shipped data, flags what rules miss, keeps hard
negatives out); layer 3 (an LLM can add a flag, never clear one); replies; the urgent tier;
the benchmark's arithmetic."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core.safety import assess, emergency_reply, red_flags, urgent_line
from core.safety.classifier import (Config, ModelMismatchError, check_stamp, choose_threshold,
                                    read, train)
from core.safety.dataset import load_training, parse_tsv, training_hash
from core.safety.findings import extract_findings
from core.safety.replies import FIRST_AID
from core.safety.rules import RULES
from core.safety.taxonomy import BY_ID, CATEGORIES, IDS, accepted
from core.safety.urgent import urgent_findings


def layer1(text: str, lang: str = "en") -> list[str]:
    return [f.category for f in assess(text, lang).flags]


# -- layer 1: one positive per category per language, with third person / typo / mixed -------
POSITIVES = [
    ("cardiac_chest_pain", "ko", "아버지가 가슴을 움켜쥐고 식은땀을 흘리세요"),
    ("cardiac_chest_pain", "en", "crushing chest pain going down my left arm and I'm sweating"),
    ("stroke", "ko", "엄마가 갑자기 말이 어눌하고 한쪽 입꼬리가 처졌어요"),
    ("stroke", "en", "my dad's face is droopin on one side and he cant lift his arm"),
    ("airway_breathing", "ko", "흡입기를 써도 소용없고 입술이 파래요"),
    ("airway_breathing", "en", "my son is choking on a grape and can't breathe"),
    ("anaphylaxis", "ko", "새우 먹고 입술이랑 혀가 부어서 숨쉬기 힘들어요"),
    ("anaphylaxis", "en", "stung by a wasp and now hives all over and I feel faint"),
    ("major_bleeding", "ko", "와파린 먹는데 코피가 한 시간째 안 멈춰요"),
    ("major_bleeding", "en", "my dad is on Eliquis and he fell and hit his head"),
    ("collapse", "ko", "할머니가 쓰러지셨는데 불러도 대답이 없으세요"),
    ("collapse", "en", "my husband passed out and I can't wake him"),
    ("seizure", "ko", "아이가 눈이 돌아가고 온몸을 떨면서 경련을 해요"),
    ("seizure", "en", "my mum has been fitting for more than 5 minutes"),
    ("new_confusion", "ko", "할머니가 갑자기 저를 못 알아보시고 횡설수설하세요"),
    ("new_confusion", "en", "grandpa is suddenly confused and doesn't know where he is"),
    ("sepsis", "ko", "항암치료 중인데 열이 38.3도예요"),
    ("sepsis", "en", "I'm on chemo and my temperature is 38.4"),
    ("meningitis", "ko", "열이 나고 목이 뻣뻣해서 고개를 못 숙여요"),
    ("meningitis", "en", "my son has a fever and a rash that doesn't fade under a glass"),
    ("thunderclap_headache", "ko", "갑자기 머리가 깨질 듯이 아파요 인생 최악의 두통이에요"),
    ("thunderclap_headache", "en", "worst headache of my life came on in under a minute"),
    ("obstetric", "ko", "임신 34주인데 오늘 하루 종일 태동이 없어요"),
    ("obstetric", "en", "my period is two weeks late and I have sharp pain on one side and shoulder tip pain"),
    ("diabetic_emergency", "ko", "혈당기에 HI라고만 뜨고 계속 토해요"),
    ("diabetic_emergency", "en", "dad is having a hypo and can't swallow, he's getting drowsy"),
    ("paediatric_red_flags", "ko", "생후 6주 된 아기가 열이 38.2도예요"),
    ("paediatric_red_flags", "en", "two month old baby with a temperature of 38.5"),
    ("poisoning_overdose", "ko", "아이가 할머니 혈압약을 몇 알 삼켰어요"),
    ("poisoning_overdose", "en", "I took a whole bottle of sleeping pills"),
    ("carbon_monoxide", "ko", "가족들이 다 머리가 아프고 토해요 가스보일러를 켜 놨어요"),
    ("carbon_monoxide", "en", "our CO alarm went off and my head is throbbing"),
    ("serious_burns", "ko", "끓는 물에 팔 전체를 데었고 물집이 크게 생겼어요"),
    ("serious_burns", "en", "hot oil splashed on my face and the skin has gone white"),
    ("suicide_self_harm", "ko", "죽고 싶어요 약을 모아 뒀어요"),
    ("suicide_self_harm", "en", "I want to end my life tonight"),
    ("acute_abdomen", "ko", "갑자기 배가 칼로 찌르는 것처럼 아프고 판자처럼 딱딱해요"),
    ("acute_abdomen", "en", "my 13 year old has sudden pain in one testicle and it's swollen"),
    ("sudden_vision_loss", "ko", "갑자기 왼쪽 눈이 안 보여요"),
    ("sudden_vision_loss", "en", "it's like a curtain has come down over my right eye"),
    ("stroke", "ko", "아빠 face drooping 있고 말을 못 하세요"),                # mixed
    ("meningitis", "ko", "fever 있고 stiff neck이에요 빛도 눈부셔요"),          # mixed, particles
    ("diabetic_emergency", "ko", "혈당기는 HI예요 아이가 계속 토하고 숨을 깊고 빠르게 쉬어요"),
    ("cardiac_chest_pain", "en", "chest realy tight and pain goin down my left arm"),  # typos
]


@pytest.mark.parametrize("category,lang,text", POSITIVES)
def test_layer1_finds_each_category(category, lang, text):
    assert category in layer1(text, lang)


def test_every_category_has_rules_a_source_first_aid_and_a_layer1_test():
    assert set(RULES) == set(IDS) == set(FIRST_AID) == {c for c, _, _ in POSITIVES}
    for c in CATEGORIES:
        assert c.source and c.ktas.startswith("KTAS") and c.ko and c.en
        assert FIRST_AID[c.id].source and FIRST_AID[c.id].url.startswith("https://")
    assert {lang for _, lang, _ in POSITIVES} == {"ko", "en"}


NEGATIVES = [
    ("ko", "가슴 통증은 없고 기침만 좀 나요"),                              # negated
    ("en", "no weakness, numbness or trouble speaking, just a tension headache"),
    ("ko", "3년 전에 뇌경색이 와서 재활했어요 지금 먹는 약 괜찮은지 궁금해요"),  # past
    ("en", "I had a seizure as a child, none since"),
    ("ko", "아버지가 심근경색으로 돌아가셨는데 저도 위험한가요?"),            # family history
    ("en", "heart disease runs in my family, when should I get screened?"),
    ("ko", "뇌졸중 초기 증상이 뭐예요?"),                                  # general question
    ("en", "what are the warning signs of a heart attack in women?"),
    ("en", "what should I do if someone near me collapses holding their chest?"),  # hypothetical
    ("ko", "소설에서 주인공이 자살을 생각하는 장면을 쓰는데 어떻게 묘사해야 할까요"),
    ("en", "my chest muscles are sore after bench press yesterday"),       # mild
    ("ko", "아침에 란투스 20단위 맞고 식사 때마다 노보래피드 맞아요 운동 전에 용량 줄여야 하나요"),  # routine schedule
    ("en", "I take 20 units of Lantus in the morning and NovoRapid with meals, should I lower it before exercise?"),
    ("ko", "10년 전에 자해했던 흉터가 있어요 흉터 연고 추천해 주세요"),          # healed past event
    ("en", "I have old self-harm scars from 10 years ago, any cream that helps?"),
    ("ko", "손에 두드러기가 좀 났는데 숨쉬는 건 괜찮고 입술도 안 부었어요"),     # reassuring negation
    ("en", "I have a few hives on my arm but my breathing is completely normal and no swelling"),
    ("en", "small cut on my finger, it stopped bleeding"),
    ("ko", "혈당기에 HI가 뜨면 무슨 뜻이에요?"),
    ("en", "had a nosebleed that stopped after 5 minutes of pinching, not on blood thinners"),
]


@pytest.mark.parametrize("lang,text", NEGATIVES)
def test_layer1_hard_negatives(lang, text):
    assert layer1(text, lang) == []


def test_findings_numbers_age_pregnancy_and_medication():
    f = extract_findings("생후 6주 된 아기가 열이 38.2도예요", "ko")
    assert f.age_months == pytest.approx(6 / 4.345, abs=0.01) and f.temperature_c == 38.2 and f.fever
    f = extract_findings("my two month old has a temperature of 101.3F", "en")
    assert f.age_months == 2 and f.temperature_c == pytest.approx(38.5, abs=0.05)
    f = extract_findings("I'm 32 weeks pregnant, BP 165/112 and a pounding headache", "en")
    assert f.pregnant and f.gestation_weeks == 32 and (f.sbp, f.dbp) == (165, 112)
    f = extract_findings("mum's sugar is 2.1 mmol and she's on gliclazide", "en")
    assert f.glucose_mgdl == pytest.approx(37.8, abs=0.1) and "insulin_or_su" in f.meds
    assert "anticoagulant" in extract_findings("아버지가 자렐토 드세요", "ko").meds
    assert "anticoagulant" not in extract_findings("not on blood thinners", "en").meds
    assert extract_findings("oxygen saturation 88%", "en").spo2 == 88
    assert extract_findings("가슴 통증은 없어요", "ko").suppressed.get("symptom_generic") == "negated"


def test_discriminators_need_their_combination():
    assert "major_bleeding" in layer1("I'm on warfarin and banged my head on the cupboard")
    assert "major_bleeding" not in layer1("I banged my head on the cupboard, small bump")
    assert "paediatric_red_flags" in layer1("my 7 week old has a fever of 38.1")
    assert "paediatric_red_flags" not in layer1("my 2 year old has 38.2, had calpol and is running around")
    assert "meningitis" in layer1("high fever and my neck is so stiff I can't put my chin on my chest")
    assert "meningitis" not in layer1("stiff neck but no fever, I changed my pillow")
    assert "sepsis" in layer1("my mum is having chemotherapy and her temperature just hit 39")
    assert "sepsis" not in layer1("I'm on chemo but no fever, just tired")
    assert "airway_breathing" in layer1("my oxygen is reading 87% on the finger monitor")


def test_self_harm_with_bleeding_flags_both_and_the_reply_gives_both_numbers():
    for lang, text in (("en", "I cut my wrist and it's still bleeding"),
                       ("ko", "칼로 손목을 그었는데 피가 계속 나요")):
        cats = layer1(text, lang)
        assert {"suicide_self_harm", "major_bleeding"} <= set(cats)
        reply = emergency_reply(cats, lang, emergency="112", crisis="988")
        assert "988" in reply and "112" in reply


# -- replies -----------------------------------------------------------------------------------
def test_one_reply_covers_every_category_with_first_aid_and_sources_in_the_users_language():
    ko = emergency_reply(["stroke", "cardiac_chest_pain"], "ko", emergency="119")
    assert "119" in ko and "뇌졸중" in ko and "심장성 흉통" in ko and "기다리는 동안" in ko
    assert FIRST_AID["stroke"].ko in ko and FIRST_AID["cardiac_chest_pain"].ko in ko
    assert "NHS, Heart attack" in ko and "https://www.nhs.uk/conditions/stroke/" in ko
    en = emergency_reply(["carbon_monoxide"], "en", emergency="999")
    assert en.startswith("⚠️ This may be an emergency (carbon monoxide poisoning). Call 999 now.")
    assert FIRST_AID["carbon_monoxide"].en in en and "replace a clinician" in en
    only_crisis = emergency_reply(["suicide_self_harm"], "en", emergency="911", crisis="988")
    assert "988" in only_crisis and "Call 911 now" not in only_crisis
    with pytest.raises(ValueError):
        emergency_reply(["not_a_category"], "en")


def test_urgent_tier_findings_and_line():
    f = extract_findings("my blood pressure reading is 182/115 but I feel fine", "en")
    assert [u.rule for u in urgent_findings(f)] == ["bp_180_120"]
    assert assess("my blood pressure reading is 182/115 but I feel fine", "en").flags == []
    assert [u.rule for u in urgent_findings(extract_findings("산소포화도 93%예요 기침이 나요", "ko"))] == ["spo2_90_94"]
    assert urgent_findings(extract_findings("what does a blood pressure of 185/125 mean?", "en")) == []
    line = urgent_line(["혈압 182/115 mmHg"], "ko", "119")
    assert "오늘 안에 진료" in line and "119" in line
    with pytest.raises(ValueError):
        urgent_line([], "en")


# -- layer 2 -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def model(embedder):
    m = read()
    check_stamp(m, embedder.name)
    return m


def test_shipped_model_matches_the_shipped_training_data(embedder, model):
    assert model.meta["training_sha256"] == training_hash()
    assert model.embedder == embedder.name
    assert model.categories == sorted(IDS)
    cv = model.meta["cv"]
    assert cv["messages"] == len(load_training()) and len(load_training(written_only=True)) >= 2000
    assert cv["recall"] >= model.config.target_recall - 0.005
    assert 0.0 < model.threshold < 1.0


def test_training_data_covers_every_category_both_languages_and_hard_negatives():
    rows = load_training(written_only=True)
    pos = [r for r in rows if r.emergency]
    neg = [r for r in rows if not r.emergency]
    assert len(neg) >= len(pos) and len(rows) >= 2000
    for cat in IDS:
        langs = {r.lang for r in pos if r.category == cat}
        assert langs == {"ko", "en"}, cat
        assert sum(1 for r in neg if r.borrows == cat) >= 20, cat
    kinds = {r.kind for r in rows}
    assert {"typo", "slang", "mixed", "neg", "past", "fam", "gen", "hyp", "mild", "routine"} <= kinds
    assert {r.person for r in pos} == {"self", "other", "child"}


def test_stale_model_is_refused_with_the_command_that_rebuilds_it(model, embedder):
    with pytest.raises(ModelMismatchError, match="medbot triage train"):
        check_stamp(model, embedder.name, data_hash="0" * 64)
    with pytest.raises(ModelMismatchError, match="embedder"):
        check_stamp(model, "openai/text-embedding-3-small")


def test_model_files_are_arrays_not_pickles_and_small():
    from importlib import resources

    base = resources.files("core.safety").joinpath("data")
    npz = base.joinpath("triage_model.npz")
    with np.load(str(npz), allow_pickle=False) as z:
        assert set(z.files) == {"char_cols"} | {f"{h}_{p}" for h in ("binary", "binary_text", "category", "category_text")
                                                for p in ("e5", "char", "find", "intercept")}
    assert len(npz.read_bytes()) < 5_000_000
    json.loads(base.joinpath("triage_model.json").read_text("utf-8"))


# Written after the model was trained and never added to its training data: layer 1 misses
# them, layer 2's text-only head is what catches them (see core/safety/classifier.py).
UNSEEN = [("en", "spilled a pot of boiling pasta water down my leg, the skin is bubbling up", "serious_burns"),
          ("en", "he's on the floor twitching and won't answer me", "collapse"),
          ("ko", "오른쪽 눈이 갑자기 반쯤 안 보여요", "sudden_vision_loss"),
          ("ko", "아이가 할아버지 약통에서 알약을 꺼내 먹었어요 몇 개인지 몰라요", "poisoning_overdose")]


@pytest.mark.parametrize("lang,text,category", UNSEEN)
def test_layer2_catches_unseen_phrasing_that_layer1_misses(model, embedder, lang, text, category):
    assert layer1(text, lang) == []
    res = assess(text, lang, None, embedder.embed_query(text), model)
    assert [(f.category, f.layer) for f in res.flags] == [(category, 2)]


def test_layer2_flags_phrasing_without_rules_and_spares_hard_negatives(model, embedder):
    catches = ["my grandad went grey and sweaty and says his chest feels like a tight belt",
               "아빠가 갑자기 얼굴 반쪽이 이상하고 팔에 힘이 안 들어간대요"]
    for text in catches:
        pred = model.predict(text, embedder.embed_query(text))
        assert pred.flagged, (text, pred)
    for text in ["what are the warning signs of a stroke?", "운동은 일주일에 얼마나 해야 하나요?",
                 "I take 20 units of Lantus in the morning and NovoRapid with meals"]:
        pred = model.predict(text, embedder.embed_query(text))
        assert not pred.flagged, (text, pred)


def test_threshold_is_the_highest_that_keeps_the_target_recall():
    p = np.array([0.9, 0.8, 0.7, 0.6, 0.1, 0.2])
    y = np.array([True, True, True, True, False, False])
    assert choose_threshold(p, y, 1.0) == 0.6
    assert choose_threshold(p, y, 0.75) == 0.7
    with pytest.raises(ValueError):
        choose_threshold(p, np.zeros(6, bool), 0.9)


def test_train_on_a_subset_chooses_a_threshold_by_cross_validation():
    all_rows = load_training(written_only=True)
    rows = [r for r in all_rows if r.category in ("stroke", "seizure")] + \
        [r for r in all_rows if r.borrows in ("stroke", "seizure") and not r.emergency]
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(len(rows), 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    m = train(rows, vecs, "test-embedder", Config(n_features_log2=12, folds=3, C=1.0), data_hash="x")
    assert m.categories == ["seizure", "stroke"] and m.meta["cv"]["messages"] == len(rows)
    assert m.meta["cv"]["recall"] >= 0.97 - 1e-9
    pred = m.predict("my dad is having a seizure right now", vecs[0], lang="en")
    assert 0 <= pred.p_emergency <= 1 and pred.categories[0][0] in ("seizure", "stroke")
    two = m.predict("seizure", None, lang="en").categories
    assert 0 < sum(p for _, p in two) <= 1 + 1e-6 and {c for c, _ in two} <= {"seizure", "stroke"}


def test_training_rows_are_validated():
    with pytest.raises(ValueError, match="5 tab-separated"):
        parse_tsv("stroke.tsv", "en\t1\ts\tplain")
    with pytest.raises(ValueError, match="not a category"):
        parse_tsv("sprain.tsv", "en\t1\ts\tplain\ttext")
    assert parse_tsv("stroke.tsv", "# c\nen\t0\ts\tgen\twhat is a stroke?")[0].borrows == "stroke"


def test_red_flags_runs_both_layers(embedder):
    flags = red_flags("my grandad went grey and sweaty and says his chest feels like a tight belt")
    assert flags and flags[0].category == "cardiac_chest_pain"
    assert red_flags("what are the side effects of metformin?") == []


def test_accepted_maps_issue_3_labels():
    assert accepted("syncope_confusion", legacy=True) == ("collapse", "new_confusion")
    assert accepted(None) == () and accepted("sepsis") == ("sepsis",) and accepted("stroke") == ("stroke",)
    assert all(c in BY_ID for c in accepted("stroke", legacy=True))


# -- the gate in the graph ---------------------------------------------------------------------
from core.messages import InboundMessage  # noqa: E402
from core.qtype.model import forget_vectors  # noqa: E402
from core.safety.second_opinion import SYSTEM, parse  # noqa: E402
from tests.conftest import make_settings  # noqa: E402
from bot.bench.fake_llm import FakeOpenAIServer  # noqa: E402


def _nodes(reply):
    return [n["node"] for n in reply.trace["nodes"]]


MILD = "I've had a dull headache since this morning and feel a bit off"


def test_layer3_adds_a_flag_for_a_symptom_layers_1_2_missed(tmp_path, default_index):
    with FakeOpenAIServer() as server:
        from core.agent import Agent

        agent = Agent(make_settings(tmp_path, default_index, OPENAI_API_KEY="k",
                                    OPENAI_BASE_URL=server.base_url, LLM_MODEL="fake"))
        assert assess(MILD, "en", None, agent.services.embedder.embed_query(MILD),
                      read()).flags == []  # layers 1-2 do not flag it
        server.script_chat(json.dumps({"emergency": True, "categories": ["thunderclap_headache", "x"],
                                       "reason": "sudden severe headache"}))
        reply = agent.handle(InboundMessage(user_id="t:l3", text=MILD))
        reqs = [r["json"] for r in server.requests_to("/chat/completions")]
    assert len(reqs) == 1 and reply.trace["llm_calls"] == 1
    assert reqs[0]["messages"][0]["content"] == SYSTEM and MILD not in SYSTEM
    assert json.loads(reqs[0]["messages"][1]["content"])["message"] == MILD
    assert reqs[0]["response_format"] == {"type": "json_object"}
    assert reply.trace["red_flags"] == [{"category": "thunderclap_headache", "layer": 3,
                                         "matched": "LLM second opinion: sudden severe headache"}]
    assert _nodes(reply) == ["triage", "extract_slots", "store_memory", "store_response"]
    assert "119" in reply.text and FIRST_AID["thunderclap_headache"].en in reply.text


def test_layer3_cannot_clear_a_flag_and_is_not_asked_then(tmp_path, default_index):
    with FakeOpenAIServer() as server:
        from core.agent import Agent

        agent = Agent(make_settings(tmp_path, default_index, OPENAI_API_KEY="k",
                                    OPENAI_BASE_URL=server.base_url, LLM_MODEL="fake"))
        server.script_chat(json.dumps({"emergency": False, "categories": []}))
        reply = agent.handle(InboundMessage(user_id="t:l3b", text="my husband is clutching his chest and sweating"))
        assert server.requests == []
    assert reply.trace["red_flags"][0]["category"] == "cardiac_chest_pain" and reply.trace["llm_calls"] == 0


def test_layer3_no_and_malformed_replies_add_nothing():
    assert parse(json.dumps({"emergency": False, "categories": ["stroke"]})).categories == []
    assert parse("not json").note.startswith("second opinion: reply was not JSON")
    assert parse(json.dumps({"emergency": True, "categories": ["unknown"]})).emergency


def test_layer3_says_no_and_the_normal_answer_follows(tmp_path, default_index):
    with FakeOpenAIServer() as server:
        from core.agent import Agent

        agent = Agent(make_settings(tmp_path, default_index, OPENAI_API_KEY="k",
                                    OPENAI_BASE_URL=server.base_url, LLM_MODEL="fake"))
        server.script_chat(json.dumps({"emergency": False, "categories": [], "reason": "mild"}))
        reply = agent.handle(InboundMessage(user_id="t:l3c", text=MILD,
                                            flags={"self_refine_enabled": False}))
        first = server.requests_to("/chat/completions")[0]["json"]
    assert first["messages"][0]["content"] == SYSTEM
    assert reply.trace["red_flags"] == [] and reply.trace["generator"] == "llm"
    assert "retrieve" in _nodes(reply)


def test_urgent_tier_adds_a_line_above_the_normal_answer(agent):
    reply = agent.handle(InboundMessage(user_id="t:urg", text="혈압을 쟀는데 182/115가 나왔어요 증상은 없어요"))
    assert reply.trace["red_flags"] == [] and reply.trace["triage"]["urgent"] == ["bp_180_120"]
    first, rest = reply.text.split("\n\n", 1)
    assert "오늘 안에 진료" in first and "182/115" in first and rest.strip()
    assert "retrieve" in _nodes(reply)  # the normal answer still ran
    plain = agent.handle(InboundMessage(user_id="t:urg", text="운동은 일주일에 얼마나 해야 하나요?"))
    assert "오늘 안에 진료" not in plain.text


@pytest.mark.parametrize("text", [
    "아침에 란투스 20단위 맞고 식사 때마다 노보래피드 맞아요 운동 전에 용량 줄여야 하나요",
    "I have old self-harm scars from 10 years ago, any cream that helps?",
    "손에 두드러기가 좀 났는데 숨쉬는 건 괜찮고 입술도 안 부었어요",
])
def test_issue_false_alarms_get_normal_answers(agent, text):
    reply = agent.handle(InboundMessage(user_id="t:fa", text=text))
    assert reply.trace["red_flags"] == [] and reply.trace["generator"] != "triage"
    assert not reply.text.startswith("⚠️") and "기다리는 동안" not in reply.text and "While you wait" not in reply.text


def test_the_question_is_embedded_once_and_slots_extracted_once(agent, monkeypatch):
    seen: list[str] = []
    real_embed, real_extract = agent.services.embedder.embed_query, agent.services.extractor.extract
    monkeypatch.setattr(agent.services.embedder, "embed_query", lambda t: seen.append(t) or real_embed(t))
    calls: list[str] = []
    monkeypatch.setattr(agent.services.extractor, "extract",
                        lambda t, lang, use_medcat=True: calls.append(t) or real_extract(t, lang, use_medcat))
    q = "메트포르민 부작용이 뭔가요?"
    forget_vectors()  # an earlier test's turn may have left its vector for reuse
    reply = agent.handle(InboundMessage(user_id="t:once", text=q, flags={"self_refine_enabled": False}))
    assert seen.count(q) == 1 and calls == [q]
    assert reply.trace["nodes"][0]["node"] == "triage" and reply.trace["triage"]["p_emergency"] is not None


def test_triage_runs_in_llm_mode_too(agent):
    reply = agent.handle(InboundMessage(user_id="t:llm", text="I can't breathe and my lips are blue", mode="llm"))
    assert reply.trace["red_flags"] and reply.trace["llm_calls"] == 0 and "119" in reply.text


# -- the benchmark -----------------------------------------------------------------------------
def test_bench_triage_arithmetic(tmp_path):
    from bot.bench.triage import Outcome, Timing, summary

    def o(em, gold, flags, lang="en", kind="plain"):
        return Outcome("x", lang, em, gold, (gold,) if em else (), "self", kind, flags, bool(flags), False, "t")

    outs = [o(True, "stroke", ["stroke"]), o(True, "stroke", ["cardiac_chest_pain"]), o(True, "sepsis", [], "ko"),
            o(False, "none", [], kind="neg"), o(False, "none", ["stroke"], kind="past"), o(False, "none", [], "ko")]
    t = Timing()
    for i in range(4):
        t.add("triage", 0.001 * (i + 1), 0.001)
    s = summary(outs, t, "d")
    assert s["recall"] == round(2 / 3, 4) and s["category_hit"] == round(1 / 3, 4)
    assert s["false_alarm_rate"] == round(1 / 3, 4)
    assert s["per_category"]["stroke"] == {"n": 2, "recall": 1.0, "category_hit": 0.5}
    assert s["per_language"]["ko"]["recall"] == 0.0 and s["per_language"]["en_false_alarm"]["false_alarms"] == 1
    assert s["per_kind"]["non_emergency"]["past"]["false_alarms"] == 1
    assert s["confusion"]["stroke->cardiac_chest_pain"] == 1 and s["confusion"]["sepsis->none"] == 1
    assert s["latency_ms"]["triage"]["p50_ms"] == pytest.approx(2.5, abs=0.6)


def test_bench_triage_reads_both_schemas(tmp_path):
    from core.safety.dataset import load_jsonl

    p = tmp_path / "d.jsonl"
    p.write_text('{"id": "a", "lang": "en", "text": "t", "emergency": true, "category": "brand_new"}\n'
                 '{"id": "b", "lang": "ko", "text": "t", "red_flag": "syncope_confusion"}\n'
                 '{"id": "c", "lang": "ko", "text": "t", "red_flag": null}\n\n', "utf-8")
    rows = load_jsonl(p)
    assert [(r["emergency"], r["category"], r["legacy"]) for r in rows] == \
        [(True, "brand_new", False), (True, "syncope_confusion", True), (False, "none", True)]
    (tmp_path / "bad.jsonl").write_text("{oops\n", "utf-8")
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        load_jsonl(tmp_path / "bad.jsonl")


def test_implausible_numbers_are_not_urgent_findings():
    f = extract_findings("혈압이 400/20이고 HbA1c 80%예요", "ko")
    assert (f.sbp, f.dbp) == (None, None) and urgent_findings(f) == []
