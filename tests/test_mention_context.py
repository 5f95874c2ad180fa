"""Status of a concept mention (ConText rules) and allergy context, through the real extractor
(MedCAT pack built from the bundled concept table)."""

from __future__ import annotations

import pytest

from config.settings import Settings
from core.services import make_extractor
from tests.conftest import CACHE


@pytest.fixture(scope="module")
def extractor():
    return make_extractor(Settings(_env_file=None, MEDCAT_PACKS_DIR=CACHE / "medcat"))  # type: ignore[call-arg]


def statuses(extractor, text: str, lang: str) -> dict[str, tuple[str, str]]:
    return {c.name_en: (c.slot, c.status) for c in extractor.extract(text, lang).concepts}


@pytest.mark.parametrize("text,lang,name,slot,status", [
    ("당뇨병이 있어요", "ko", "diabetes mellitus", "condition", "active"),
    ("당뇨는 없어요", "ko", "diabetes mellitus", "condition", "negated"),
    ("I have no history of asthma", "en", "asthma", "condition", "negated"),
    ("고혈압일까요?", "ko", "hypertension", "condition", "uncertain"),
    ("could this be gout?", "en", "gout", "condition", "uncertain"),
    ("아버지가 고혈압이에요", "ko", "hypertension", "condition", "family"),
    ("my mom has breast cancer", "en", "breast cancer", "condition", "family"),
    ("메트포르민 끊었어요", "ko", "metformin", "medication", "stopped"),
    ("I stopped taking lisinopril last month", "en", "lisinopril", "medication", "stopped"),
    ("메트포르민 부작용이 뭔가요?", "ko", "metformin", "medication", "topic"),
    ("what are the side effects of lisinopril?", "en", "lisinopril", "medication", "topic"),
    ("페니실린 알레르기가 있어요", "ko", "penicillins", "allergy", "active"),
    ("I'm allergic to sulfa drugs", "en", "sulfonamides", "allergy", "active"),
    ("페니실린 알레르기는 없어요", "ko", "penicillins", "allergy", "negated"),
])
def test_status_of_a_mention(extractor, text, lang, name, slot, status):
    assert statuses(extractor, text, lang)[name] == (slot, status)


def test_mixed_statuses_in_one_message(extractor):
    got = statuses(extractor, "당뇨는 있는데 고혈압은 없어요", "ko")
    assert got["diabetes mellitus"][1] == "active" and got["hypertension"][1] == "negated"
    both = {(c.name_en, c.status) for c in extractor.extract("아버지가 당뇨인데 저도 당뇨일까요?", "ko").concepts}
    assert both == {("diabetes mellitus", "family"), ("diabetes mellitus", "uncertain")}
    switch = statuses(extractor, "I don't take warfarin anymore, switched to eliquis", "en")
    assert switch["warfarin"][1] == "stopped" and switch["apixaban"][1] == "active"


def test_allergy_reaction_is_not_a_separate_symptom(extractor):
    got = statuses(extractor, "아스피린 먹으면 숨이 차고 두드러기가 올라와요", "ko")
    assert got == {"aspirin": ("allergy", "active")}


def test_food_without_allergy_context_is_not_a_fact(extractor):
    assert statuses(extractor, "우유 마셔도 되나요?", "ko") == {}
