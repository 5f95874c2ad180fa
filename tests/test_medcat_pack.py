"""The MedCAT 2 pack built from a concept table: Korean names survive, particles are allowed,
abbreviations need capitals, Latin names end on a word boundary, the pack is rebuilt only when
the table changes, and an operator's pack replaces the bundled one."""

from __future__ import annotations

import json

import pytest

from config.settings import Settings
from core.extraction.lexicon import Lexicon
from core.extraction.medcat_pack import ensure_pack, load_pack, pack_hash
from core.extraction.recognizer import MedCATRecognizer
from core.services import make_extractor

ROWS = [
    {"cui": "C0011849", "tui": "T047", "slot": "condition", "name_en": "diabetes mellitus",
     "name_ko": "당뇨병", "synonyms_en": ["diabetes", "DM", "sugar diabetes"], "synonyms_ko": ["당뇨"]},
    {"cui": "C0020538", "tui": "T047", "slot": "condition", "name_en": "hypertension",
     "name_ko": "고혈압", "synonyms_en": ["high blood pressure", "HTN"], "synonyms_ko": []},
    {"cui": "C0025598", "tui": "T121", "slot": "medication", "name_en": "metformin",
     "name_ko": "메트포르민", "synonyms_en": [], "synonyms_ko": []},
]


def table(rows) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


@pytest.fixture(scope="module")
def pack(tmp_path_factory):
    return ensure_pack(tmp_path_factory.mktemp("packs"), table(ROWS), ROWS)


@pytest.fixture(scope="module")
def recognizer(pack):
    return MedCATRecognizer(load_pack(pack))


def found(recognizer, text):
    return [(m.cui, m.surface) for m in recognizer.find(text)]


def test_korean_names_with_particles(recognizer):
    assert found(recognizer, "당뇨병과 고혈압이 있고 메트포르민을 먹어요") == [
        ("C0011849", "당뇨병"), ("C0020538", "고혈압"), ("C0025598", "메트포르민")]


def test_longest_name_wins_and_latin_names_end_on_a_word_boundary(recognizer):
    assert found(recognizer, "I have sugar diabetes") == [("C0011849", "sugar diabetes")]
    assert found(recognizer, "diabetesX and hypertensions") == []


def test_abbreviations_only_in_capitals(recognizer):
    assert found(recognizer, "DM and HTN") == [("C0011849", "DM"), ("C0020538", "HTN")]
    assert found(recognizer, "dm me later") == []


def test_pack_is_reused_until_the_table_changes(tmp_path):
    first = ensure_pack(tmp_path, table(ROWS), ROWS)
    stamp = (first / "cdb").stat().st_mtime_ns
    assert ensure_pack(tmp_path, table(ROWS), ROWS) == first
    assert (first / "cdb").stat().st_mtime_ns == stamp
    changed = ROWS[:2]
    assert pack_hash(table(changed)) != pack_hash(table(ROWS))
    second = ensure_pack(tmp_path, table(changed), changed)
    assert second != first
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".build")] == []


def test_operator_pack_replaces_the_bundled_one(pack, tmp_path):
    settings = Settings(_env_file=None, MEDBOT_DATA_DIR=tmp_path, MEDCAT_MODEL_PACK=pack)  # type: ignore[call-arg]
    ex = make_extractor(settings)
    got = {(c.cui, c.slot) for c in ex.extract("고혈압이 있어요", "ko").concepts}
    assert got == {("C0020538", "condition")}
    assert not (tmp_path / "medcat").exists()  # nothing was built


def test_missing_operator_pack_is_a_clear_error(tmp_path):
    settings = Settings(_env_file=None, MEDBOT_DATA_DIR=tmp_path,  # type: ignore[call-arg]
                        MEDCAT_MODEL_PACK=tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="MedCAT model pack not found"):
        make_extractor(settings)


def test_concepts_outside_the_table_get_their_slot_from_the_tui(pack):
    ex = make_extractor(Settings(_env_file=None, MEDCAT_MODEL_PACK=pack))  # type: ignore[call-arg]
    ex.lexicon = Lexicon([ROWS[0]])  # the operator's pack knows concepts our table does not
    got = {(c.cui, c.slot, c.name_en) for c in ex.extract("I take metformin", "en").concepts}
    assert got == {("C0025598", "medication", "metformin")}


def test_flag_off_uses_the_dictionary_scan(pack):
    ex = make_extractor(Settings(_env_file=None, MEDCAT_MODEL_PACK=pack))  # type: ignore[call-arg]
    text = "당뇨병과 고혈압이 있어요"
    assert {c.cui for c in ex.extract(text, "ko", use_medcat=False).concepts} == \
        {c.cui for c in ex.extract(text, "ko").concepts}
