"""Bounded cost per message (README "Bounded cost per message"): what a long message costs is capped, and the reply says
truthfully what was read and stored. Speed itself is measured by `medbot bench robustness`;
these tests assert the behaviour that bounds it: MedCAT's spelling correction never sees a token
longer than a word, MedCAT and the ConText rules do work linear in the length, the embedder
reads a bounded query, and the caps cut what is read and stored."""

from __future__ import annotations

import re

import pytest

from conftest import make_settings
from core.agent import Agent
from core.extraction import context as ctx
from core.messages import InboundMessage

MAX_TOKEN_CHARS = 45  # core.extraction.recognizer.MAX_TOKEN_CHARS: the longest English word

PROSE = ("저는 65세이고 10년째 고혈압이 있어서 암로디핀을 먹고 있어요. 혈압은 150/95예요. "
         "I also take metformin for type 2 diabetes and my HbA1c was 8.2%. ")


@pytest.fixture(scope="module")
def extractor(tmp_path_factory, default_index):
    from core.services import make_extractor

    return make_extractor(make_settings(tmp_path_factory.mktemp("cost"), default_index))


def test_medcat_spell_check_never_sees_a_token_longer_than_a_word(extractor, monkeypatch):
    from medcat.components.normalizing.normalizer import BasicSpellChecker

    seen: list[int] = []
    original = BasicSpellChecker.raw_edits1.__func__

    def spy(cls, word, *a, **kw):
        seen.append(len(word))
        if len(word) > MAX_TOKEN_CHARS:  # 4,096 letters would need ~1 GB here
            raise AssertionError(f"edits1 of a {len(word)}-character token")
        return original(cls, word, *a, **kw)

    monkeypatch.setattr(BasicSpellChecker, "raw_edits1", classmethod(spy))
    for word in ("x" * 4096, "metforminhypertension" * 3000, "고혈압" * 2000):
        text = f"I take metformin. {word} I have hypertensionn and asthmaa."
        slots = extractor.extract(text, "en")
        assert any("metformin" in c.name_en.lower() for c in slots.concepts)
    assert seen and max(seen) <= MAX_TOKEN_CHARS  # misspelt words are still corrected


def test_long_tokens_are_blanked_without_moving_offsets():
    from core.extraction.recognizer import mask_long_tokens

    text = "aspirin " + "z" * 100 + " 고혈압 " + "가" * 50 + " ok"
    masked = mask_long_tokens(text)
    assert len(masked) == len(text)
    assert "z" not in masked and "가" not in masked
    assert masked.startswith("aspirin ") and masked.endswith(" 고혈압 " + " " * 50 + " ok")


def test_medcat_reads_bounded_pieces_that_cover_the_text():
    from core.extraction.recognizer import CHUNK_CHARS, chunks

    text = PROSE * 200 + "x" * 5000 + PROSE * 10
    pieces = chunks(text, CHUNK_CHARS)
    assert "".join(p for _, p in pieces) == text
    assert all(len(p) <= CHUNK_CHARS and text[o:o + len(p)] == p for o, p in pieces)
    assert all(p.endswith((" ", "\n")) for _, p in pieces[:-1] if "x" * 50 not in p)


class _Counting:
    """A compiled pattern that counts the characters its scans cover."""

    def __init__(self, pattern: re.Pattern) -> None:
        self.pattern, self.chars = pattern, 0

    def finditer(self, text, pos=0, endpos=None):
        self.chars += (len(text) if endpos is None else endpos) - pos
        return self.pattern.finditer(text, pos, *(() if endpos is None else (endpos,)))

    def __getattr__(self, name):
        return getattr(self.pattern, name)


@pytest.mark.parametrize("repeat", [20, 160])
def test_context_rules_scan_the_text_a_bounded_number_of_times(extractor, monkeypatch, repeat):
    """Boundaries and sentence ends are found once per message, not once per mention (today's
    main rescanned the whole text for every mention: 25 KB took 27 s)."""
    boundary, sentence = _Counting(ctx._BOUNDARY), _Counting(ctx._SENTENCE_END)
    monkeypatch.setattr(ctx, "_BOUNDARY", boundary)
    monkeypatch.setattr(ctx, "_SENTENCE_END", sentence)
    text = PROSE * repeat
    slots = extractor.extract(text, "ko")
    assert slots.concepts  # there were mentions to place in context
    assert boundary.chars <= 2 * len(text) and sentence.chars <= 2 * len(text)


def test_mention_context_reads_only_its_window():
    """A clause with no boundary for thousands of characters is read only within
    CONTEXT_WINDOW of the mention (NegEx scopes triggers to six words)."""
    text = "my father " + "word " * 400 + "has asthma and " + "word " * 400
    start = text.index("asthma")
    lo, hi = ctx.clause_bounds(text, start, start + 6)
    assert (lo, hi) == (start - ctx.CONTEXT_WINDOW, start + 6 + ctx.CONTEXT_WINDOW)
    assert ctx.mention_context(text, start, start + 6, "en", "condition").status == "active"
    near = "my father has asthma"
    assert ctx.mention_context(near, near.index("asthma"), len(near), "en", "condition").status == "family"


def test_query_embedding_reads_at_most_the_configured_tokens(embedder, tmp_path, default_index):
    from core.language.embedding import E5Embedder

    agent = Agent(make_settings(tmp_path, default_index, EMBED_QUERY_MAX_TOKENS=64))
    assert agent.services.embedder.max_query_tokens == 64
    capped = E5Embedder(max_query_tokens=64)
    long_q = "What are the side effects of metformin in older adults with kidney disease? " * 20
    cut = capped._cut_query(long_q)
    assert long_q.startswith(cut) and len(cut) < len(long_q)
    assert capped._model.token_count(cut, True) <= 64 < capped._model.token_count(long_q[:len(cut) + 1], True)
    assert capped._cut_query("metformin dose?") == "metformin dose?"  # short questions untouched
    assert (capped.embed_query(long_q) @ embedder.embed_query(cut)) > 0.999


def test_caps_cut_what_is_read_and_stored():
    from core.frontdesk.intake import read_message

    raw = "가" * 10 + " " + PROSE * 100
    intake = read_message(raw, max_input_chars=1000, max_stored_chars=5000)
    assert len(intake.text) <= 1000 and intake.read_cut and intake.stored_cut
    assert intake.stored.startswith(raw[:4000])
    assert f"{len(raw):,} characters received, the first 5,000 stored" in intake.stored
    assert intake.meta() == {"intake": {"received_chars": len(raw), "read_chars": len(intake.text),
                                        "stored_chars": 5000}}
    whole = read_message("short question?", 1000, 5000)
    assert whole.stored == whole.text == "short question?" and not whole.meta()


def test_a_1_mb_message_is_answered_politely_and_stored_cut(agent, settings):
    text = (PROSE * (1_000_000 // len(PROSE) + 1))[:1_000_000]
    reply = agent.handle(InboundMessage(user_id="cost:mb", text=text, locale="en"))
    assert "error" not in reply.trace, reply.trace
    first = reply.text.split("\n")[0]
    cap, read = settings.max_stored_chars, reply.trace["intake"]["read_chars"]
    assert read <= settings.max_input_chars
    assert f"read only its beginning: its first {settings.max_question_tokens} tokens for this " \
           f"answer and its first {read:,} characters for your health facts" in first, first
    assert f"the first {cap:,} of its 1,000,000 characters are saved" in first, first
    assert reply.trace["intake"]["received_chars"] == 1_000_000
    turn = agent.services.repo.recent_turns("cost:mb", 1)[0]
    assert turn.user_text.startswith(text[:cap - 10])
    assert turn.user_text.endswith(f"[… message cut by medbot: 1,000,000 characters received, the first {cap:,} stored]")
    assert len(turn.user_text) < cap + 200
    assert turn.meta["intake"]["stored_chars"] == cap and turn.reply


def test_a_message_within_the_caps_is_stored_whole_and_said_so(agent, settings):
    text = (PROSE * 80)[:6000]  # under MAX_INPUT_CHARS, over MAX_QUESTION_TOKENS
    reply = agent.handle(InboundMessage(user_id="cost:6k", text=text, locale="en"))
    first = reply.text.split("\n")[0]
    assert f"first {settings.max_question_tokens} tokens" in first and "(All of it is saved.)" in first
    assert agent.services.repo.recent_turns("cost:6k", 1)[0].user_text == text.strip()
