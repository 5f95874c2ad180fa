"""The loopback Telegram and Slack servers live in the shipped bench package (``medbot bench
cluster`` drives them from an installed wheel); ``fakes.telegram_server`` and
``fakes.slack_server`` stay importable under their old names for the tests."""

import sys

from bot.bench import fake_slack, fake_telegram

sys.modules[__name__ + ".telegram_server"] = fake_telegram
sys.modules[__name__ + ".slack_server"] = fake_slack
