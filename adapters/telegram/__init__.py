"""The Telegram channel (python-telegram-bot 22): see :mod:`adapters.telegram.channel`."""

from adapters.telegram.channel import TelegramChannel, session_id_of, user_id_of

__all__ = ["TelegramChannel", "session_id_of", "user_id_of"]
