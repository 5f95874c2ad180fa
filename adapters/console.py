"""The console channel: a terminal conversation, translated to and from the core's messages.

Translation only, like the other channels: each typed line becomes an
:class:`~core.messages.InboundMessage` (user ``console:<name>``, session = user, a private
chat) handed to the :class:`~core.frontdesk.Frontdesk`, which writes it ahead, runs the
commands (``/help``, ``/start``, ``/profile``, ``/forget``, ``/admin ...``) and the turns, and
delivers the replies, printed here. ``/quit`` and ``/exit`` end the conversation (after the
answers still owed are printed). Text that starts with "/" but is no command (``/weird``,
``/ 혈압이 150인데요``) is an ordinary message, as on Telegram.
"""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Callable
from typing import Protocol, TextIO

from core.messages import InboundMessage, OutboundMessage

PROMPT = "you> "
_HELP = "Type a question. /help for commands, /quit to leave."
COMMANDS = ("start", "help", "profile", "forget", "admin")
QUIT = ("/quit", "/exit")
_COMMAND = re.compile(r"/([A-Za-z]+)(?=\s|$)")


class Desk(Protocol):
    """What the console needs from the core (:class:`core.frontdesk.Frontdesk`)."""

    async def submit(self, msg: InboundMessage, deliver, typing=None, on_accepted=None): ...

    async def close(self, timeout: float | None = None) -> bool: ...


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


def user_id_of(user: str) -> str:
    """The console user's id ``console:<user>``.

    Raises:
        ValueError: the id would be longer than 200 characters, or ``user`` is empty.
    """
    if not user.strip():
        raise ValueError("the console user name is empty")
    uid = f"console:{user}"
    if len(uid) > 200:
        raise ValueError("the console user name is longer than 192 characters")
    return uid


class ConsoleChannel:
    """Read lines, hand each to the front desk, print every reply it delivers.

    Args:
        frontdesk: the shared :class:`core.frontdesk.Frontdesk` (anything with ``submit``
            and ``close``).
        user: the console user name; the user id is ``console:<user>``.
        stdin, stdout: streams (the process's by default).
    Raises:
        ValueError: see :func:`user_id_of`.
    """

    def __init__(self, frontdesk: Desk, user: str = "local", stdin: TextIO | None = None,
                 stdout: TextIO | None = None) -> None:
        self.frontdesk = frontdesk
        self.user_id = user_id_of(user)
        self.session_id = self.user_id
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout
        self.on_reply: Callable[[OutboundMessage], None] | None = None

    def to_inbound(self, line: str) -> InboundMessage:
        """Translate one typed line: a known ``/command`` with its arguments, else text."""
        text = line.strip()
        command, args = None, []
        m = _COMMAND.match(text)
        if m and m.group(1).lower() in COMMANDS:
            command, args = m.group(1).lower(), text[m.end():].split()
        return InboundMessage(channel="console", user_id=self.user_id, session_id=self.session_id,
                              text=text, command=command, args=args, private=True)

    def deliver_to(self, session_id: str):  # noqa: ANN201 (core.frontdesk.Deliver | None)
        """A sender of replies to this console's session (crash recovery answers through it),
        or ``None`` for any other session."""
        return self.deliver if session_id == self.session_id else None

    async def deliver(self, reply: OutboundMessage) -> None:
        """Print one reply (``bot> `` and the rendered text)."""
        print("bot> " + render(reply) + "\n", file=self.stdout)
        self.stdout.flush()
        if self.on_reply:
            self.on_reply(reply)

    async def arun(self) -> int:
        """Converse until ``/quit`` or end of input, each reply printed before the next prompt;
        then wait for the answers still owed. Returns the number of lines handed over."""
        print(_HELP, file=self.stdout)
        turns = 0
        while True:
            self.stdout.write(PROMPT)
            self.stdout.flush()
            line = await asyncio.to_thread(self.stdin.readline)
            if not line or line.strip() in QUIT:
                break
            if not line.strip():
                continue
            done = await self.frontdesk.submit(self.to_inbound(line), self.deliver)
            if done is not None:
                await done
            turns += 1
        await self.frontdesk.close(None)
        return turns

    def run(self, on_reply: Callable[[OutboundMessage], None] | None = None) -> int:
        """:meth:`arun` in a new event loop (the CLI's entry)."""
        self.on_reply = on_reply
        return asyncio.run(self.arun())
