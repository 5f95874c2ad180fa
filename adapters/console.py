"""The console channel: a terminal conversation, translated to and from the core's messages."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Protocol, TextIO

from core.messages import InboundMessage, OutboundMessage

PROMPT = "you> "
_HELP = "Type a question. /quit to leave."


class Handler(Protocol):
    """What the console needs from the core: one turn in, one reply out."""

    def handle(self, msg: InboundMessage) -> OutboundMessage: ...


def render(reply: OutboundMessage) -> str:
    """The reply text followed by its numbered sources (title, source, URL)."""
    lines = [reply.text]
    if reply.sources:
        lines.append("")
        lines.append("출처 / Sources:" if reply.lang == "ko" else "Sources:")
        for s in reply.sources:
            where = f" <{s.url}>" if s.url else ""
            lines.append(f"  [{s.n}] {s.title} — {s.source}{where}")
    return "\n".join(lines)


class ConsoleChannel:
    """Read lines, send each to the core as an :class:`InboundMessage`, print the reply.

    Args:
        handler: the agent (anything with ``handle``).
        user: the console user name; the user id is ``console:<user>``.
        stdin, stdout: streams (the process's by default).
    """

    def __init__(self, handler: Handler, user: str = "local", stdin: TextIO | None = None,
                 stdout: TextIO | None = None) -> None:
        self.handler = handler
        self.user_id = f"console:{user}"
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout

    def to_inbound(self, line: str) -> InboundMessage:
        """Translate one typed line."""
        return InboundMessage(channel="console", user_id=self.user_id, session_id=self.user_id,
                              text=line)

    def run(self, on_reply: Callable[[OutboundMessage], None] | None = None) -> int:
        """Converse until ``/quit`` or end of input; returns the number of turns handled."""
        out = self.stdout
        print(_HELP, file=out)
        turns = 0
        while True:
            out.write(PROMPT)
            out.flush()
            line = self.stdin.readline()
            if not line or line.strip() in ("/quit", "/exit"):
                break
            if not line.strip():
                continue
            reply = self.handler.handle(self.to_inbound(line.rstrip("\n")))
            print("bot> " + render(reply) + "\n", file=out)
            out.flush()
            turns += 1
            if on_reply:
                on_reply(reply)
        return turns
