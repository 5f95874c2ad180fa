"""Stage 3 of context engineering (SPEC.md §3.3): the token-budgeted prompt.

Budget (tokens, cl100k_base): total 4,000 by default; system 400; documents 900; the question as
it is; the remainder is the history, split between the memory tiers (SPEC.md §3.2): semantic
20% (the profile line and long-term facts), compressed 30% (summaries of earlier turns), working
50% (the last turns verbatim). SPEC §3.3's older wording (profile 20%, long-term summary 10%,
dialogue the rest) is superseded by the tier split of §3.2 and issue 4. Every section is cut to
its share, so the assembled prompt never exceeds the total.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from core.tokens import count_tokens, truncate_tokens

SEPARATOR_RESERVE = 16  # tokens for the blank lines joining sections

_HEAD = {
    "ko": {"profile": "## 환자 프로필", "long_term": "## 이전 대화 요약", "dialogue": "## 최근 대화",
           "documents": "## 근거 문서", "user": "사용자", "bot": "도우미"},
    "en": {"profile": "## Patient profile", "long_term": "## Earlier conversation",
           "dialogue": "## Recent dialogue", "documents": "## Evidence documents",
           "user": "User", "bot": "Assistant"},
}


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
    """Split ``total`` tokens: fixed system and documents shares, the question as it is, then
    20% / 30% / rest (50%) of the remainder to the semantic / compressed / working tiers.

    Raises:
        ValueError: system + documents + question exceed the total.
    """
    remainder = total - system - documents - question_tokens - SEPARATOR_RESERVE
    if remainder < 0:
        raise ValueError(f"question of {question_tokens} tokens does not fit a {total}-token budget")
    semantic = int(remainder * SEMANTIC_SHARE)
    compressed = int(remainder * COMPRESSED_SHARE)
    return TokenPlan(total, system, documents, question_tokens, semantic, compressed,
                     remainder - semantic - compressed)


def _heads(lang: str) -> dict[str, str]:
    return _HEAD.get(lang, _HEAD["en"])


def render_section(kind: str, body: str, budget: int, lang: str) -> str:
    """``## heading`` + body, cut to ``budget`` tokens; ``""`` when the body is empty."""
    if not body.strip() or budget <= 0:
        return ""
    return truncate_tokens(f"{_heads(lang)[kind]}\n{body.strip()}", budget)


def render_dialogue(turns: list[tuple[str, str | None]], budget: int, lang: str,
                    reply_tokens: int = 150) -> str:
    """Recent turns verbatim (oldest first), dropping the oldest until they fit ``budget``.

    Args:
        turns: (user text, bot reply or ``None``) pairs, oldest first.
        reply_tokens: each bot reply is cut to this many tokens (the user's words are kept).
    """
    h = _heads(lang)
    blocks = []
    for user, reply in turns:
        block = f"{h['user']}: {user}"
        if reply:
            block += f"\n{h['bot']}: {truncate_tokens(reply, reply_tokens)}"
        blocks.append(block)
    head_tokens = count_tokens(h["dialogue"]) + 1
    kept: list[str] = []
    used = head_tokens
    for block in reversed(blocks):
        n = count_tokens(block) + 1
        if used + n > budget:
            break
        kept.insert(0, block)
        used += n
    return render_section("dialogue", "\n".join(kept), budget, lang) if kept else ""


def render_documents(docs: list[dict[str, Any]], budget: int, lang: str,
                     min_doc_tokens: int = 40) -> tuple[str, int]:
    """Numbered evidence (``[n] title — source (score)`` + text) within ``budget`` tokens.

    Each document gets an equal share; documents that would get fewer than ``min_doc_tokens``
    are dropped from the end.
    Returns:
        (the section text, how many documents it holds).
    """
    if not docs or budget <= 0:
        return "", 0
    head = _heads(lang)["documents"]
    room = budget - count_tokens(head) - 1
    n = len(docs)
    while n > 1 and room // n < min_doc_tokens:
        n -= 1
    share = room // n
    parts = []
    for i, d in enumerate(docs[:n], start=1):
        text = f"[{i}] {d['title']} — {d.get('source', '')} (score {d.get('score', 0):.4f})\n{d['text']}"
        parts.append(truncate_tokens(text, share - 1))
    return truncate_tokens(head + "\n" + "\n".join(parts), budget), n


def assemble_messages(system: str, sections: list[str], question: str) -> list[dict[str, str]]:
    """Chat messages: one system message (system prompt + non-empty sections), the question."""
    body = "\n\n".join([system, *[s for s in sections if s]])
    return [{"role": "system", "content": body}, {"role": "user", "content": question}]


def prompt_tokens(messages: list[dict[str, str]]) -> int:
    """Tokens of the messages' contents (the budgeted quantity)."""
    return sum(count_tokens(m["content"]) for m in messages)
