"""The Slack channel (slack-bolt ``AsyncApp``): see :mod:`adapters.slack.channel`."""

from adapters.slack.channel import SlackChannel, session_id_of, user_id_of

__all__ = ["SlackChannel", "session_id_of", "user_id_of"]
