"""Stage 3 of context engineering (SPEC.md §3.3): the token-budgeted prompt.

Budget (tokens, cl100k_base): total 4,000 by default; system 400; documents 900; the question as
it is; the remainder is the history, split between the memory tiers (SPEC.md §3.2): semantic
20% (the profile line and long-term facts), compressed 30% (summaries of earlier turns), working
50% (the last turns verbatim). SPEC §3.3's older wording (profile 20%, long-term summary 10%,
dialogue the rest) is superseded by the tier split of §3.2. Every section is cut to
its share, so the assembled prompt never exceeds the total.

Layout (SPEC.md §11 "Privacy", :mod:`core.privacy.injection`): the system message holds only the team's text and the
:data:`core.answer.prompts.QUOTED_DATA` rule; each section is quoted in its tag (:data:`TAGS`) in the
user message, the question last. The rule and the question's tags are reserved from the history
(:func:`frame_tokens`); each section's tags count against its own share.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

from core.answer import prompts
from core.privacy.injection import escape_quoted
from core.language.tokens import count_tokens, truncate_tokens

SEPARATOR_RESERVE = 16  # tokens for the blank lines joining sections

TAGS = {"profile": "patient_profile", "long_term": "conversation_summary",
        "dialogue": "recent_dialogue", "documents": "evidence", "question": "question"}
"""The tag that quotes each section in the user message; the keys are the
``sections`` keys of the state."""
_SPEAKER = {"user": "user", "bot": "assistant"}


SEMANTIC_SHARE, COMPRESSED_SHARE = 0.2, 0.3  # working memory gets the rest (0.5), SPEC.md §3.2


@dataclass
class TokenPlan:
    """Token budget per prompt section (SPEC.md §3.3) and per memory tier (§3.2).

    ``semantic`` is the profile section, ``compressed`` the summaries (long-term section),
    ``working`` the recent dialogue.
    """

    total: int
    system: int
    documents: int
    question: int
    semantic: int
    compressed: int
    working: int

    def to_dict(self) -> dict[str, int]:
        """Plain dict for the trace."""
        return asdict(self)


def plan_tokens(total: int, system: int, documents: int, question_tokens: int) -> TokenPlan:
    """Split ``total`` tokens: fixed system and documents shares, the question as it is, the
    quoting frame (:func:`frame_tokens`), then 20% / 30% / rest (50%) of the remainder to the
    semantic / compressed / working tiers.

    Raises:
        ValueError: system + documents + question exceed the total.
    """
    remainder = total - system - documents - question_tokens - SEPARATOR_RESERVE - frame_tokens()
    if remainder < 0:
        raise ValueError(f"question of {question_tokens} tokens does not fit a {total}-token budget")
    semantic = int(remainder * SEMANTIC_SHARE)
    compressed = int(remainder * COMPRESSED_SHARE)
    return TokenPlan(total, system, documents, question_tokens, semantic, compressed,
                     remainder - semantic - compressed)


@lru_cache(maxsize=1)
def frame_tokens() -> int:
    """Tokens the quoting adds beyond the sections' budgets: the longest :data:`prompts.QUOTED_DATA`
    rule with its separator, and the ``<question>`` tags."""
    rule = max(count_tokens("\n\n" + r) for r in prompts.QUOTED_DATA.values())
    return rule + wrapper_tokens("question")


def wrapper_tokens(kind: str) -> int:
    """Tokens of a section's opening and closing tag lines."""
    tag = TAGS[kind]
    return count_tokens(f"<{tag}>\n") + count_tokens(f"\n</{tag}>")


def _wrap(kind: str, quoted: str, budget: int) -> str:
    """``quoted`` (already escaped) inside the section's tags, its body cut so that the whole
    block is at most ``budget`` tokens; ``""`` when nothing fits."""
    tag = TAGS[kind]
    room = budget - wrapper_tokens(kind)
    while room > 0:
        block = f"<{tag}>\n{truncate_tokens(quoted, room)}\n</{tag}>"
        if count_tokens(block) <= budget:
            return block
        room -= 1 + (count_tokens(block) - budget)
    return ""


def render_section(kind: str, body: str, budget: int, lang: str) -> str:
    """The body quoted in its section's tags (:data:`TAGS`, text escaped by
    :func:`core.privacy.injection.escape_quoted`), cut to ``budget`` tokens; ``""`` when the body is
    empty. ``lang`` is kept for the callers' symmetry (tags are the same in every language)."""
    if not body.strip() or budget <= 0:
        return ""
    return _wrap(kind, escape_quoted(body.strip()), budget)


def render_dialogue(turns: list[tuple[str, str | None]], budget: int, lang: str,
                    reply_tokens: int = 150) -> str:
    """Recent turns verbatim (oldest first), dropping the oldest until they fit ``budget``.

    Args:
        turns: (user text, bot reply or ``None``) pairs, oldest first.
        reply_tokens: each bot reply is cut to this many tokens (the user's words are kept).
    """
    blocks = []
    for user, reply in turns:
        block = f"<{_SPEAKER['user']}>{escape_quoted(user)}</{_SPEAKER['user']}>"
        if reply:
            block += (f"\n<{_SPEAKER['bot']}>{escape_quoted(truncate_tokens(reply, reply_tokens))}"
                      f"</{_SPEAKER['bot']}>")
        blocks.append(block)
    kept: list[str] = []
    used = wrapper_tokens("dialogue")
    for block in reversed(blocks):
        n = count_tokens(block) + 1
        if used + n > budget:
            break
        kept.insert(0, block)
        used += n
    return _wrap("dialogue", "\n".join(kept), budget) if kept else ""


def render_documents(docs: list[dict[str, Any]], budget: int, lang: str,
                     min_doc_tokens: int = 40, start: int = 1) -> tuple[str, int]:
    """Numbered evidence (``[n] title — source (score)`` + text) quoted in ``<evidence>`` tags
    within ``budget`` tokens.

    Each document gets an equal share; documents that would get fewer than ``min_doc_tokens``
    are dropped from the end. Numbers run from ``start`` (a re-retrieval's documents continue
    after the first ones).
    Returns:
        (the section text, how many documents it holds).
    """
    if not docs or budget <= 0:
        return "", 0
    room = budget - wrapper_tokens("documents")
    n = len(docs)
    while n > 1 and room // n < min_doc_tokens:
        n -= 1
    share = room // n
    parts = []
    for i, d in enumerate(docs[:n], start=start):
        text = f"[{i}] {d['title']} — {d.get('source', '')} (score {d.get('score', 0):.4f})\n{d['text']}"
        parts.append(truncate_tokens(escape_quoted(text), share - 1))
    return _wrap("documents", "\n".join(parts), budget), n


def assemble_messages(system: str, sections: list[str], question: str,
                      lang: str = "en") -> list[dict[str, str]]:
    """Chat messages (SPEC.md §11 "Privacy"): the system message holds only the team's text (``system`` and
    the :data:`prompts.QUOTED_DATA` rule); one user message holds the quoted sections
    (already rendered in their tags) and the question in ``<question>`` tags, last.

    Prefix reuse (SPEC.md §11 "Verification"): callers pass the sections in the order that
    changes least often first, so a server's prompt cache reuses the longest prefix: the fixed
    system text (the same for every turn), then the evidence, then the profile and memory, then
    the question. The verification and repair calls append messages after these unchanged.

    The question and the rule are counted by :func:`plan_tokens` (the question as it is, the
    rule and tags in :func:`frame_tokens`), so the budget still holds.
    """
    rule = prompts.QUOTED_DATA.get(lang, prompts.QUOTED_DATA["en"])
    user = "\n\n".join([*[s for s in sections if s], quote_question(question)])
    return [{"role": "system", "content": f"{system}\n\n{rule}"}, {"role": "user", "content": user}]


def quote_question(question: str) -> str:
    """The question in ``<question>`` tags, escaped."""
    return f"<{TAGS['question']}>\n{escape_quoted(question)}\n</{TAGS['question']}>"


def plain_messages(system: str, question: str) -> list[dict[str, str]]:
    """The plain-LLM baseline's messages (``mode=llm``): its one-line system prompt and the
    question as the user message, nothing else (no memory, no documents)."""
    return [{"role": "system", "content": system}, {"role": "user", "content": question}]


def prompt_tokens(messages: list[dict[str, str]]) -> int:
    """Tokens of the messages' contents (the budgeted quantity)."""
    return sum(count_tokens(m["content"]) for m in messages)
