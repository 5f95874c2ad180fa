"""Message formatting the channels share: the reply as light Markdown with its numbered
sources, rendered to Telegram HTML or Slack mrkdwn, and split at a platform's length limit.

Pure text functions: no state, no I/O. The front desk (:mod:`core.frontdesk.desk`) decides what to
say; these functions only decide how a platform shows it.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable

from core.messages import OutboundMessage
from core.language.tokens import longest_fitting_prefix

SOURCES_HEAD = {"ko": "출처", "en": "Sources"}
"""The heading of the numbered source list under an answer, per reply language."""

_BOLD = re.compile(r"\*\*(.+?)\*\*", re.S)
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)")
_CODE = re.compile(r"`([^`\n]+)`")
_SEPARATORS = ("\n\n", "\n", ". ", "? ", "! ", "。", "다. ", "; ", ", ", " ")


def compose(reply: OutboundMessage) -> str:
    """The reply as light Markdown: its text, then the numbered sources with links."""
    if not reply.sources:
        return reply.text
    head = SOURCES_HEAD["ko" if reply.lang == "ko" else "en"]
    lines = [reply.text, "", f"**{head}**"]
    for s in reply.sources:
        title = s.title.replace("[", "(").replace("]", ")")
        label = f"[{title}]({s.url})" if s.url.startswith(("http://", "https://")) else title
        lines.append(f"[{s.n}] {label}" + (f" — {s.source}" if s.source else ""))
    return "\n".join(lines)


_SPAN = re.compile(r"`([^`\n]+)`|\[([^\]\n]+)\]\((https?://[^)\s]+)\)|\*\*")
_EMPTY_BOLD = re.compile(r"<b>(\s*)</b>")


def _spans(text: str) -> tuple[list[re.Match], set[int]]:
    """Markdown tokens of ``text`` in order (code and links are atomic, so nothing is matched
    inside them) and the indices of the ``**`` tokens that pair up (1st with 2nd, 3rd with
    4th...; an odd last one, or a pair with only spaces between, stays literal)."""
    tokens = list(_SPAN.finditer(text))
    stars = [i for i, m in enumerate(tokens) if m.group(0) == "**"]
    pairs = zip(stars[0::2], stars[1::2])  # "****", "** **" (nothing between) stay literal
    return tokens, {i for a, b in pairs if text[tokens[a].end():tokens[b].start()].strip()
                    for i in (a, b)}


def to_telegram_html(text: str) -> str:
    """Light Markdown to Telegram's HTML parse mode (``**b**``, ``[t](url)``, `` `c` ``);
    everything else is escaped.

    Well-formed for every input: code and links are atomic and found first, bold
    pairs the ``**`` between them, so tags nest properly; bold is closed around code (Telegram:
    bold may contain any entity but pre and code), empty bold is dropped, and the only tags are
    ``b``, ``a href`` and ``code`` (Bot API "Formatting options", HTML style).
    """
    tokens, paired = _spans(text)
    out, pos, bold = [], 0, False
    for i, m in enumerate(tokens):
        out.append(html.escape(text[pos:m.start()], quote=False))
        pos = m.end()
        if m.group(0) == "**":
            out.append(("</b>" if bold else "<b>") if i in paired else "**")
            bold = bold != (i in paired)
        elif m.group(1) is not None:
            code = f"<code>{html.escape(m.group(1), quote=False)}</code>"
            out.append(f"</b>{code}<b>" if bold else code)
        else:
            out.append(f'<a href="{html.escape(m.group(3), quote=True)}">'
                       f'{html.escape(m.group(2), quote=False)}</a>')
    out.append(html.escape(text[pos:], quote=False))
    return _EMPTY_BOLD.sub(r"\1", "".join(out))


def to_plain_text(text: str) -> str:
    """Light Markdown as the text a reader sees, without markup: bold markers dropped, links
    as ``label (url)``, code as its content (the resend when Telegram refuses the HTML)."""
    tokens, paired = _spans(text)
    out, pos = [], 0
    for i, m in enumerate(tokens):
        out.append(text[pos:m.start()])
        pos = m.end()
        if m.group(0) == "**":
            out.append("" if i in paired else "**")
        elif m.group(1) is not None:
            out.append(m.group(1))
        else:
            out.append(f"{m.group(2)} ({m.group(3)})")
    out.append(text[pos:])
    return "".join(out)


def to_slack_mrkdwn(text: str) -> str:
    """Light Markdown to Slack mrkdwn (``*b*``, ``<url|t>``, `` `c` ``); ``& < >`` escaped as
    Slack requires."""
    out = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    out = _LINK.sub(lambda m: f"<{m.group(2)}|{m.group(1).replace('|', '/')}>", out)
    return _BOLD.sub(r"*\1*", out)


def split_text(text: str, limit: int, measure: Callable[[str], int] = len) -> list[str]:
    """Split ``text`` into pieces with ``measure(piece) <= limit``, never inside a Markdown
    span (bold, link, code) when avoidable, preferring paragraph, line, sentence, then word
    boundaries.

    Args:
        limit: the platform's limit (e.g. 4096 for Telegram) in ``measure`` units.
        measure: length of a piece as the platform counts it (e.g. of its rendered HTML).
    Returns:
        Non-empty pieces whose concatenation (with the whitespace at the cuts) is ``text``.
    """
    pieces, rest = [], text.strip()
    while rest:
        if measure(rest) <= limit:
            pieces.append(rest)
            break
        cut = _cut_point(rest, limit, measure)
        head = rest[:cut].rstrip()
        if head:
            pieces.append(head)
        rest = rest[cut:].lstrip()
    return pieces


def _cut_point(text: str, limit: int, measure: Callable[[str], int]) -> int:
    fit = longest_fitting_prefix(text, limit, measure, at_least=1)
    spans = [m.span() for rx in (_LINK, _BOLD, _CODE) for m in rx.finditer(text)]
    inside = lambda cut: any(a < cut < b for a, b in spans)  # noqa: E731
    for min_share in (0.5, 0.0):
        for sep in _SEPARATORS:
            pos = text.rfind(sep, 0, fit)
            while pos > 0:
                cut = pos + len(sep)
                if cut < fit * min_share:
                    break
                if not inside(cut):
                    return cut
                pos = text.rfind(sep, 0, pos)
    starts = [a for a, b in spans if a < fit < b and a > 0]
    return min(starts) if starts else fit
