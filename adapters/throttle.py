"""How often a channel may change what a chat shows while an answer is written."""

from __future__ import annotations

from dataclasses import dataclass

EDIT_INTERVAL_S = 1.0
"""Seconds between two updates of a preview in one chat: Telegram's flood control allows about
one message a second in a chat (Bot API FAQ, "My bot is hitting limits"), Slack's chat methods
about one a second per channel (Slack API "Rate limits", special rate limits of
``chat.postMessage``)."""


@dataclass
class ChatThrottle:
    """When the next preview update may go to one chat (``time.monotonic()`` seconds); shared
    by the turns of a chat so the limit holds across them."""

    next_at: float = 0.0
