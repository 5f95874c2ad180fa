"""The one inbound and one outbound message type that every channel adapter translates to."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

Role = Literal["patient", "clinician", "admin"]


class InboundMessage(BaseModel):
    """A user's message as the core sees it.

    Attributes:
        channel: ``console``, ``telegram``, ``slack``...
        user_id: stable channel-scoped id, e.g. ``console:alice``, ``telegram:42`` (at most
            200 characters: the ``user.id`` column).
        session_id: the conversation (a chat, a Slack thread); defaults to the user id (at most
            200 characters).
        private: the chat is seen only by this user and the bot (a Telegram private chat, a
            Slack DM, an ephemeral slash-command reply, the console); set by the adapter from
            the platform's chat type. ``False`` (the default) when in doubt: commands that show
            stored data (``profile``, ``admin``) answer only in a private chat.
        text: the raw text (any length; the core truncates what it sends to a model, never
            what it stores).
        locale: optional language hint (``ko``, ``en``); detected from the text when absent.
        role: patient, clinician or admin (adapters map their platforms' users to roles).
        flags: per-request feature-flag overrides (SPEC.md §10).
        mode: ``ai_agent`` (full pipeline) or ``llm`` (plain-LLM baseline, SPEC.md §4).
        command: a channel command translated by the adapter (``start``, ``help``, ``profile``,
            ``forget``, ``admin``), ``None`` for an ordinary message.
        args: the command's arguments (e.g. ``["profile", "telegram:42"]`` for ``/admin``).
        message_id: the platform's id of the message (Telegram message id, Slack event id),
            kept in the turn to recognise a delivery repeated after a crash.
        turn_id: the turn already written for this message (write-ahead by
            :meth:`core.agent.Agent.accept`); ``None``: the agent writes it first.
        sent_seq: the message's place in its chat by the platform's clock or counter
            (Telegram message id, Slack ``ts``); a session's turns are answered in this order
            when two processes got them at once (``None``: by arrival).
    """

    channel: str = "console"
    user_id: str = Field(max_length=200)
    session_id: str | None = Field(default=None, max_length=200)
    private: bool = False
    text: str
    locale: str | None = None
    role: Role = "patient"
    flags: dict[str, Any] = Field(default_factory=dict)
    mode: Literal["ai_agent", "llm"] = "ai_agent"
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    message_id: str | None = None
    turn_id: int | None = None
    sent_seq: float | None = None

    @property
    def session(self) -> str:
        """The session id, or the user id when the channel gives none."""
        return self.session_id or self.user_id


class Source(BaseModel):
    """A cited document: ``n`` is the citation number used in the answer text ([n])."""

    n: int
    doc_id: str
    title: str
    source: str = ""
    url: str = ""
    score: float = 0.0


class OutboundMessage(BaseModel):
    """The core's reply: text to show, its sources, optional buttons, and the turn trace.

    ``text`` may hold light Markdown (``**bold**``, ``[title](url)``, ``- `` bullets); each
    adapter renders it in its platform's form (Telegram HTML, Slack mrkdwn). ``kind`` tells
    adapters what the reply is: ``answer`` (a turn of the agent), ``command`` (a reply to a
    command), ``notice`` (rate limit, refusal, error).
    """

    text: str
    sources: list[Source] = Field(default_factory=list)
    buttons: list[str] = Field(default_factory=list)
    lang: str = "en"
    trace: dict[str, Any] = Field(default_factory=dict)
    kind: Literal["answer", "command", "notice"] = "answer"
