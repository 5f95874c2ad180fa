"""``medbot run``: start every configured channel in one process.

Today the console is the channel; Telegram and Slack adapters join here when configured.
"""

from __future__ import annotations

import sys

from adapters.console import ConsoleChannel
from core.agent import Agent


def run_service() -> None:
    """Build the agent once and serve the console on stdin/stdout until end of input."""
    agent = Agent()
    print("medbot: console channel (no other channel configured).", file=sys.stderr)
    ConsoleChannel(agent, user="local").run()
