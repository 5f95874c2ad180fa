"""What the agent keeps and reads of one message: bounded cost per message (README "Bounded cost per message").

Two caps, both in characters of the sanitised text (``config.settings``):

- ``MAX_STORED_CHARS``: the turn stores the message whole up to it; above it only the head is
  stored, followed by :data:`TRUNCATION_NOTE` (so whoever reads the turn sees it was cut).
- ``MAX_INPUT_CHARS``: the head that triage, extraction, the embedder and the models read; the
  models then see at most ``MAX_QUESTION_TOKENS`` tokens of it (:func:`core.language.tokens`).

Only the first ``MAX_STORED_CHARS`` characters are ever sanitised, so a 1 MB message costs no
more than the cap. :func:`reply_note` says truthfully what happened to a long message.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.language.text import sanitize

TRUNCATION_NOTE = "\n\n[… message cut by medbot: {received:,} characters received, the first {kept:,} stored]"
_WORD_BACKOFF = 64  # characters a cut may move back to end on whitespace instead of mid-word


@dataclass(frozen=True)
class Intake:
    """One message after the caps.

    Attributes:
        text: what triage, extraction and the models read (≤ ``max_input_chars`` characters).
        stored: what the turn stores (the sanitised message, or its head plus the note).
        received_chars: characters of the message as received (before sanitising).
        kept_chars: characters of the sanitised message in ``stored`` (the note excluded).
        stored_cut: True when ``stored`` is only the head of the message.
        read_cut: True when ``text`` is only the head of what was stored.
    """

    text: str
    stored: str
    received_chars: int
    kept_chars: int
    stored_cut: bool
    read_cut: bool

    def meta(self) -> dict[str, dict[str, int]]:
        """The turn's ``meta`` entry ``intake`` when a cap applied (empty dict otherwise)."""
        if not (self.stored_cut or self.read_cut):
            return {}
        return {"intake": {"received_chars": self.received_chars, "read_chars": len(self.text),
                           "stored_chars": self.kept_chars}}


def read_message(raw: str, max_input_chars: int, max_stored_chars: int) -> Intake:
    """Apply the caps to a raw message.

    Args:
        raw: the message as the channel gave it (any length, any code points).
        max_input_chars: characters read by triage, extraction and the models.
        max_stored_chars: characters stored in the turn.
    Returns:
        :class:`Intake`. ``text`` is empty when the message is (whitespace only).
    """
    stored_cut = len(raw) > max_stored_chars
    body = sanitize(raw[:max_stored_chars] if stored_cut else raw)
    text = head(body, max_input_chars)
    stored_cut = stored_cut and bool(body)
    stored = body + TRUNCATION_NOTE.format(received=len(raw), kept=len(body)) if stored_cut else body
    return Intake(text=text, stored=stored, received_chars=len(raw), kept_chars=len(body),
                  stored_cut=stored_cut, read_cut=len(text) < len(body))


def head(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, on whitespace when one is among the last
    :data:`_WORD_BACKOFF` characters (a word is not cut in half), right-stripped."""
    if len(text) <= limit:
        return text
    cut = limit
    space = text.rfind(" ", limit - _WORD_BACKOFF, limit + 1)
    newline = text.rfind("\n", limit - _WORD_BACKOFF, limit + 1)
    if max(space, newline) > 0:
        cut = max(space, newline)
    return text[:cut].rstrip()


_READ = {"ko": "메시지가 길어서 앞부분만 읽었어요: 답변에는 앞 {tokens} 토큰, 건강 정보는 앞 {chars:,}자에서 찾았어요.",
         "en": "Your message was long, so I read only its beginning: its first {tokens} tokens for "
               "this answer and its first {chars:,} characters for your health facts."}
_TOKENS_ONLY = {"ko": "메시지가 길어서 앞부분 {tokens} 토큰만 답변에 사용했어요.",
                "en": "Your message was long: I used its first {tokens} tokens for this answer."}
_SAVED = {"ko": "(전체 내용은 저장했어요.)", "en": "(All of it is saved.)"}
_SAVED_HEAD = {"ko": "(너무 길어서 {received:,}자 중 앞 {kept:,}자만 저장했어요.)",
               "en": "(It is too long to keep whole: the first {kept:,} of its {received:,} characters are saved.)"}
NOT_SAVED = {"ko": "(죄송하지만 메시지를 저장하지 못했어요. 필요하면 다시 보내 주세요.)",
              "en": "(I could not save your message, sorry; please send it again if you need it kept.)"}


def reply_note(intake: Intake, lang: str, question_cut: bool, max_question_tokens: int,
               saved: bool) -> str:
    """The line put before an answer to a long message ("" when nothing needs saying).

    Args:
        intake: the message after the caps.
        lang: ``ko`` or ``en``.
        question_cut: the models saw only ``max_question_tokens`` tokens of ``intake.text``.
        max_question_tokens: that cap (tokens, cl100k_base).
        saved: the turn row was written (False when the database refused it).
    Returns:
        One line saying what was read and what was stored, or "" for a message read and
        stored whole.
    """
    if not (question_cut or intake.read_cut or intake.stored_cut or not saved):
        return ""
    parts = []
    if intake.read_cut:
        parts.append(_READ[lang].format(tokens=max_question_tokens, chars=len(intake.text)))
    elif question_cut:
        parts.append(_TOKENS_ONLY[lang].format(tokens=max_question_tokens))
    if not saved:
        parts.append(NOT_SAVED[lang])
    elif intake.stored_cut:
        parts.append(_SAVED_HEAD[lang].format(kept=intake.kept_chars, received=intake.received_chars))
    elif parts:
        parts.append(_SAVED[lang])
    return " ".join(parts)
