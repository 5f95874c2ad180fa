"""What a turn shows while it runs: its stage (reading, searching, writing, checking) and the
answer's text as the model writes it.

The graph's nodes write :class:`TurnEvent`\\ s through LangGraph's custom stream
(``get_stream_writer``; :func:`emit`); :meth:`core.agent.Agent.handle` reads them from
``graph.stream(..., stream_mode=["values", "custom"])`` and hands each to its ``on_event``
callback on the turn's thread. The front desk bridges that thread to the event loop
(:class:`LivePump`) and feeds a channel's :class:`Live` presenter (a Telegram draft, a Slack
stream and status, the console). The reply the channel finally sends is always the checked
answer (:class:`core.messages.OutboundMessage`): the streamed text is only a preview.

An emergency reply is never previewed: when triage raises a red flag the graph emits
``emergency`` and the presenter stops showing anything, so the whole reply goes out at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

log = logging.getLogger(__name__)

Stage = Literal["reading", "searching", "writing", "checking"]
STAGES: dict[str, Stage] = {
    "triage": "reading", "extract_slots": "reading", "store_memory": "reading",
    "check_similarity": "searching", "classify_intent": "searching", "assemble_context": "searching",
    "retrieve": "searching", "generate_answer": "writing", "refine": "checking",
    "quality_check": "checking",
}
"""The stage a channel shows while each node of :data:`core.graph.NODES` runs (none for
``store_response``: the reply follows at once)."""


@dataclass(frozen=True)
class TurnEvent:
    """One thing a running turn tells its channel.

    Attributes:
        kind: ``stage`` (a new node started: ``stage`` says which kind of work), ``token``
            (``text`` is the next piece of the answer as the model writes it), ``emergency``
            (triage raised a red flag: show nothing more, the whole reply follows).
        stage: for ``stage`` events, one of :data:`Stage`.
        text: for ``token`` events, the text delta.
    """

    kind: Literal["stage", "token", "emergency"]
    stage: str = ""
    text: str = ""


OnEvent = Callable[[TurnEvent], None]


def emit(event: TurnEvent) -> None:
    """Write ``event`` to the running graph's custom stream; a no-op outside a graph run (a
    node called directly) or when nobody streams the run."""
    try:
        from langgraph.config import get_stream_writer

        writer = get_stream_writer()
    except (RuntimeError, LookupError, KeyError):  # outside a runnable context
        return
    writer(event)


class Live(Protocol):
    """A channel's presenter of one running turn (implemented by the adapters)."""

    async def on_event(self, event: TurnEvent) -> None:
        """Show ``event``; must return quickly (slow platform calls run in the background)."""


class LivePump:
    """Carries a turn's events from its thread to ``live`` on the event loop, in order.

    Args:
        live: the channel's presenter.
        loop: the running event loop (the turn itself runs on another thread).
    """

    def __init__(self, live: Live, loop: asyncio.AbstractEventLoop) -> None:
        self.live, self.loop = live, loop
        self._queue: asyncio.Queue[TurnEvent | None] = asyncio.Queue()
        self._task = loop.create_task(self._run())

    def emit(self, event: TurnEvent) -> None:
        """Queue ``event`` (thread-safe: called on the turn's thread)."""
        self.loop.call_soon_threadsafe(self._queue.put_nowait, event)

    async def _run(self) -> None:
        while (event := await self._queue.get()) is not None:
            try:
                await self.live.on_event(event)
            except Exception:  # a preview that fails never fails the turn
                log.exception("a channel could not show a turn's progress")

    async def close(self) -> None:
        """Hand over the events still queued, then stop."""
        self._queue.put_nowait(None)
        await self._task
