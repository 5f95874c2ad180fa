"""The console channel: a terminal conversation, translated to and from the core's messages.

Translation only, like the other channels: each typed line becomes an
:class:`~core.messages.InboundMessage` (user ``console:<name>``, session = user, a private
chat) handed to the :class:`~core.frontdesk.desk.Frontdesk`, which writes it ahead, runs the
commands (``/help``, ``/start``, ``/profile``, ``/forget``, ``/admin ...``) and the turns, and
delivers the replies, printed here. ``/quit`` and ``/exit`` end the conversation (after the
answers still owed are printed). Text that starts with "/" but is no command (``/weird``,
``/ 혈압이 150인데요``) is an ordinary message, as on Telegram.

While a turn runs (:class:`ConsoleLive`), each new stage prints a ``... searching`` line and
the model's answer is printed as it is written (``... `` then the text), then the checked
reply with its sources (``bot> ``) as always. An emergency prints nothing before its reply.
"""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Callable
from typing import Protocol, TextIO

from core.live import TurnEvent
from core.messages import InboundMessage, OutboundMessage

PROMPT = "you> "
_HELP = "Type a question. /help for commands, /quit to leave."
COMMANDS = ("start", "help", "profile", "forget", "admin")
QUIT = ("/quit", "/exit")
_COMMAND = re.compile(r"/([A-Za-z]+)(?=\s|$)")


class Desk(Protocol):
    """What the console needs from the core (:class:`core.frontdesk.desk.Frontdesk`)."""

    async def submit(self, msg: InboundMessage, deliver, typing=None, on_accepted=None,
                     live=None): ...

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


LIVE_PREFIX = "... "
"""Start of the lines printed while a turn runs (never ``bot> ``: that starts a reply)."""


class ConsoleLive:
    """Prints a running turn on ``out``: a line per new stage, the answer as it is written.

    Args:
        out: the console's output stream.
    """

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.stage = ""
        self.writing = False  # the answer's text is being printed on the current line
        self.silent = False  # an emergency: nothing more before the reply

    async def on_event(self, event: TurnEvent) -> None:
        """Print ``event`` (:class:`core.live.Live`)."""
        if self.silent:
            return
        if event.kind == "emergency":
            self.silent = True
            self.end_line()
        elif event.kind == "stage" and event.stage != self.stage:
            self.stage = event.stage
            if event.stage != "writing":  # the text itself shows the writing
                self.end_line()
                self.out.write(f"{LIVE_PREFIX}{event.stage}\n")
        elif event.kind == "token" and event.text:
            if not self.writing:
                self.out.write(LIVE_PREFIX)
                self.writing = True
            self.out.write(event.text)
        self.out.flush()

    def end_line(self) -> None:
        """Finish the line of streamed text, if one is open."""
        if self.writing:
            self.out.write("\n")
            self.writing = False


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
        frontdesk: the shared :class:`core.frontdesk.desk.Frontdesk` (anything with ``submit``
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

    def deliver_to(self, session_id: str):  # noqa: ANN201 (core.frontdesk.desk.Deliver | None)
        """A sender of replies to this console's session (crash recovery answers through it),
        or ``None`` for any other session."""
        return self.deliver if session_id == self.session_id else None

    async def deliver(self, reply: OutboundMessage, live: ConsoleLive | None = None) -> None:
        """Print one reply (``bot> `` and the rendered text), after the line of text streamed
        by ``live`` is ended."""
        if live is not None:
            live.end_line()
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
            live = ConsoleLive(self.stdout)
            done = await self.frontdesk.submit(self.to_inbound(line),
                                               lambda reply, live=live: self.deliver(reply, live),
                                               live=live)
            if done is not None:
                await done
            turns += 1
        await self.frontdesk.close(None)
        return turns

    def run(self, on_reply: Callable[[OutboundMessage], None] | None = None) -> int:
        """:meth:`arun` in a new event loop (the CLI's entry)."""
        self.on_reply = on_reply
        return asyncio.run(self.arun())
