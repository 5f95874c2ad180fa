"""``medbot chat`` and the console of ``medbot run``: the console channel wired to the front
desk, with the same recovery as the other channels (:mod:`core.frontdesk.recovery`): at start, the turns
of this console's conversation that a killed process received but never answered are claimed
and answered (or, past :data:`core.frontdesk.recovery.MAX_RESUME_ATTEMPTS`, given up with an apology),
and replies it stored but never printed are printed, before the first prompt."""

from __future__ import annotations

import asyncio
from typing import TextIO


async def run_console(agent, settings, user: str = "local", stdin: TextIO | None = None,
                      stdout: TextIO | None = None) -> int:
    """Converse on the console through a :class:`core.frontdesk.desk.Frontdesk` over ``agent``.

    Args:
        agent: a :class:`core.agent.Agent`.
        settings: its :class:`config.settings.Settings` (``TURN_STALE_S``, Redis, admins).
        user: the console user name (id ``console:<user>``).
        stdin, stdout: streams (the process's by default).
    Returns:
        The number of lines handed to the front desk.
    Raises:
        ValueError: a user name that makes no valid id (:func:`adapters.console.user_id_of`).
    """
    from adapters.console import ConsoleChannel
    from core.frontdesk.desk import Frontdesk
    from core.frontdesk.recovery import claim_interrupted, claim_undelivered

    frontdesk = Frontdesk(agent, settings)
    console = ConsoleChannel(frontdesk, user, stdin, stdout)
    mine = {console.session_id}
    unsent = await asyncio.to_thread(claim_undelivered, agent.services.repo, settings.turn_stale_s,
                                     sessions=mine)
    turns = await asyncio.to_thread(claim_interrupted, agent.services.repo, settings.turn_stale_s,
                                    sessions=mine)
    if unsent or turns:
        await asyncio.gather(*[frontdesk.resend(t, console.deliver) for t in unsent],
                             *[frontdesk.resume(t, console.deliver) for t in turns])
    return await console.arun()


def chat(agent, settings, user: str = "local", stdin: TextIO | None = None,
         stdout: TextIO | None = None) -> int:
    """:func:`run_console` in a new event loop."""
    return asyncio.run(run_console(agent, settings, user, stdin, stdout))
