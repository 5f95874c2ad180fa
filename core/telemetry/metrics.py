"""The service's Prometheus metrics (prometheus_client; multiprocess-safe when
``PROMETHEUS_MULTIPROC_DIR`` is set before the first import, :mod:`core.telemetry.exposition`).

Names follow the Prometheus conventions (base units, ``_total`` counters). The LLM metrics are
OpenTelemetry's GenAI client metrics (semantic conventions for generative AI, "Metrics":
``gen_ai.client.operation.duration`` in seconds, ``gen_ai.client.token.usage`` in tokens, with
``gen_ai.operation.name``, ``gen_ai.request.model``, ``gen_ai.token.type``, ``error.type``)
mapped to Prometheus-legal names as the OpenTelemetry Prometheus exporter maps them (dots to
underscores, the unit ``s`` as ``_seconds``, the annotation ``{token}`` dropped):
``gen_ai_client_operation_duration_seconds`` and ``gen_ai_client_token_usage``.

Every label takes its value from a fixed set (:data:`OUTCOMES`, :data:`LLM_KINDS`, graph
nodes, triage categories, job names, channel names) and never a user id or message text:
:func:`safe_label` forces anything else to ``other``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from prometheus_client import Counter, Gauge, Histogram

TURN_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 180.0,
                300.0, 600.0)
"""Seconds. A cached or offline turn takes 0.05-1 s; a CPU-served local model's reply takes
minutes on 2 cores (README "Local LLM": a 1.5B model's turn), so the buckets reach 600 s."""
GENAI_DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24,
                          20.48, 40.96, 81.92, 163.84, 327.68, 655.36)
"""OpenTelemetry's advised boundaries for ``gen_ai.client.operation.duration`` (up to 81.92 s),
extended by three doublings for CPU-served models (up to 655 s)."""
GENAI_TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576)
"""OpenTelemetry's advised boundaries for ``gen_ai.client.token.usage`` (powers of 4)."""

OUTCOMES = ("answer", "emergency", "cache_hit", "refused", "failed")
"""A turn's outcome: answered, an emergency reply, served from the response cache, refused
(rate limit, empty or unreadable message, erased meanwhile), or failed (an apology)."""
LLM_KINDS = ("answer", "verify", "repair", "rewrite", "compression", "summary", "triage")
"""What an LLM call is for: the answer, the sentence verification and the repair that extend
the answer's messages (SPEC §11 "Verification"), the query rewrite, document compression, the
memory summary, the triage second opinion."""
MESSAGE_RESULTS = ("accepted", "duplicate", "rate_limited", "not_stored", "closing")
_LABEL = re.compile(r"^[a-z][a-z0-9_]{0,39}$")

TURNS = Counter("medbot_turns", "Turns answered, by channel and outcome.", ["channel", "outcome"])
TURN_SECONDS = Histogram("medbot_turn_duration_seconds",
                         "Seconds from a turn's start to its reply (front desk, queueing excluded).",
                         ["channel", "outcome"], buckets=TURN_BUCKETS)
NODE_SECONDS = Histogram("medbot_node_duration_seconds", "Seconds per graph node run.", ["node"],
                         buckets=TURN_BUCKETS)
MESSAGES = Counter("medbot_messages", "Messages handed to the front desk, by what became of them.",
                   ["channel", "result"])
LLM_CALLS = Counter("medbot_llm_calls", "LLM calls, by kind and outcome (ok, error).",
                    ["kind", "outcome"])
GENAI_DURATION = Histogram("gen_ai_client_operation_duration_seconds",
                           "GenAI operation duration (OpenTelemetry gen_ai.client.operation.duration).",
                           ["gen_ai_operation_name", "gen_ai_request_model", "kind", "error_type"],
                           buckets=GENAI_DURATION_BUCKETS)
GENAI_TOKENS = Histogram("gen_ai_client_token_usage",
                         "Tokens used per GenAI operation (OpenTelemetry gen_ai.client.token.usage).",
                         ["gen_ai_operation_name", "gen_ai_request_model", "gen_ai_token_type", "kind"],
                         buckets=GENAI_TOKEN_BUCKETS)
CACHE_LOOKUPS = Counter("medbot_cache_lookups", "Response-cache lookups (turns that reached the cache).")
CACHE_HITS = Counter("medbot_cache_hits", "Response-cache hits, by scope (shared, owned).", ["scope"])
EMERGENCIES = Counter("medbot_emergencies", "Emergency replies, by triage category.", ["category"])
IN_FLIGHT = Gauge("medbot_turns_in_flight", "Turns running the agent now, per process.",
                  multiprocess_mode="liveall")
QUEUE_DEPTH = Gauge("medbot_queue_depth",
                    "Messages accepted and waiting for their session or a turn slot, per process.",
                    multiprocess_mode="liveall")
RECOVERED = Counter("medbot_recovered_turns",
                    "Turns of a dead process taken over (resumed, gave_up, unreachable).", ["result"])
LEASE_FAILURES = Counter("medbot_process_lease_failures",
                         "Failed renewals of this process's liveness lease.")
JOB_RUNS = Counter("medbot_job_runs", "Scheduled job runs, by job and outcome (ok, skipped, failed).",
                   ["job", "outcome"])
JOB_SECONDS = Histogram("medbot_job_duration_seconds", "Seconds per job run.", ["job"],
                        buckets=TURN_BUCKETS)


def safe_label(value: Any, allowed: Iterable[str] | None = None) -> str:
    """``value`` as a label value when it is in ``allowed`` (or, without ``allowed``, a short
    lower-case identifier such as a channel or node name); ``other`` otherwise, so no user text
    can ever become a label."""
    text = str(value or "")
    if allowed is not None:
        return text if text in set(allowed) else "other"
    return text if _LABEL.match(text) else "other"


def turn_outcome(trace: Mapping[str, Any], kind: str = "") -> str:
    """The outcome (:data:`OUTCOMES`) of a reply from its trace and kind."""
    if trace.get("red_flags"):
        return "emergency"
    if trace.get("rejected"):
        return "refused"
    if trace.get("error") or kind == "failed":
        return "failed"
    if trace.get("cache_hit"):
        return "cache_hit"
    return "answer"


def observe_turn(channel: str, trace: Mapping[str, Any], seconds: float, kind: str = "") -> str:
    """Count one finished turn: outcome, duration, node durations, cache, emergencies.

    Args:
        channel: the channel name (``telegram``, ``slack``, ...).
        trace: the reply's trace (:func:`core.agent.build_trace`); only its fixed-vocabulary
            fields are read (node names and ms, cache hit, red-flag categories, error flags).
        seconds: the turn's wall time.
        kind: the reply's kind (``failed`` for the front desk's apology).
    Returns:
        The outcome counted.
    """
    ch = safe_label(channel)
    outcome = turn_outcome(trace, kind)
    TURNS.labels(ch, outcome).inc()
    TURN_SECONDS.labels(ch, outcome).observe(max(0.0, seconds))
    nodes = trace.get("nodes") or []
    for node in nodes:
        if isinstance(node, Mapping) and isinstance(node.get("ms"), (int, float)):
            NODE_SECONDS.labels(safe_label(node.get("node"))).observe(node["ms"] / 1000)
    if any(isinstance(n, Mapping) and n.get("node") == "check_similarity" for n in nodes):
        CACHE_LOOKUPS.inc()
    hit = trace.get("cache_hit")
    if hit:
        scope = "owned" if isinstance(hit, Mapping) and hit.get("owner_user_id") else "shared"
        CACHE_HITS.labels(scope).inc()
    for flag in trace.get("red_flags") or []:
        category = flag.get("category") if isinstance(flag, Mapping) else None
        EMERGENCIES.labels(safe_label(category, _categories())).inc()
    return outcome


def observe_message(channel: str, result: str) -> None:
    """Count a message handed to the front desk (:data:`MESSAGE_RESULTS`)."""
    MESSAGES.labels(safe_label(channel), safe_label(result, MESSAGE_RESULTS)).inc()


def observe_llm_call(messages: list[dict[str, Any]], model: str, seconds: float,
                     prompt_tokens: int = 0, completion_tokens: int = 0,
                     error_type: str | None = None) -> None:
    """Count one chat completion (OpenTelemetry GenAI client metrics, operation ``chat``).

    Args:
        messages: the request's messages (only the system prompt is compared with the team's
            prompts to name the call's kind, :func:`llm_kind`; nothing of it is recorded).
        model: ``LLM_MODEL`` (configuration, not user data).
        seconds: wall time of the call.
        prompt_tokens, completion_tokens: the endpoint's usage (successful calls).
        error_type: the exception's class name when the call failed.
    """
    kind = llm_kind(messages)
    model = safe_label(str(model).lower().replace("-", "_").replace(".", "_")[:40])
    LLM_CALLS.labels(kind, "error" if error_type else "ok").inc()
    GENAI_DURATION.labels("chat", model, kind, safe_label((error_type or "").lower()) if error_type
                          else "").observe(max(0.0, seconds))
    if not error_type:
        GENAI_TOKENS.labels("chat", model, "input", kind).observe(prompt_tokens)
        GENAI_TOKENS.labels("chat", model, "output", kind).observe(completion_tokens)


def observe_job(name: str, outcome: str, seconds: float) -> None:
    """Count one scheduled job run (``ok``, ``skipped``, ``failed``) and its duration."""
    job = safe_label(name)
    JOB_RUNS.labels(job, safe_label(outcome, ("ok", "skipped", "failed"))).inc()
    JOB_SECONDS.labels(job).observe(max(0.0, seconds))


def llm_kind(messages: list[dict[str, Any]]) -> str:
    """The kind (:data:`LLM_KINDS`) of a chat request. Verification and repair extend the
    answer's messages and are recognised by their last user message (:data:`core.answer.prompts.VERIFY`,
    :data:`core.answer.prompts.REPAIR`); the others by their system prompt, each call site sending one
    of the team's fixed prompts (:mod:`core.answer.prompts` rewrite, :mod:`core.answer.document_compression`,
    :mod:`core.memory.summarize`, :mod:`core.safety.second_opinion`); any other request is an
    answer."""
    last = next((m.get("content") for m in reversed(messages)
                 if isinstance(m, dict) and m.get("role") == "user"), None)
    system = next((m.get("content") for m in messages
                   if isinstance(m, dict) and m.get("role") == "system"), None)
    for prefix, kind in _prompt_prefixes():
        text = last if kind in ("verify", "repair") else system
        if isinstance(text, str) and text.startswith(prefix):
            return kind
    return "answer"


_PREFIXES: list[tuple[str, str]] = []
_CATEGORIES: list[frozenset[str]] = []


def _prompt_prefixes() -> list[tuple[str, str]]:
    """``(fixed start of a prompt, kind)``, built on first use (cached resource)."""
    if not _PREFIXES:
        from core.answer import document_compression as compression, prompts
        from core.memory import summarize
        from core.safety import second_opinion

        def head(text: str) -> str:
            return text.split("{", 1)[0][:80]

        found = [(head(p), "verify") for p in prompts.VERIFY.values()]
        found += [(head(p), "repair") for p in [*prompts.REPAIR.values(), *prompts.REPAIR_QUOTED.values()]]
        found += [(head(prompts.REWRITE), "rewrite"),
                 (head(compression.SUMMARY_PROMPT), "compression"),
                 (head(second_opinion.SYSTEM), "triage")]
        found += [(head(p), "summary") for p in getattr(summarize, "_PROMPT", {}).values()]
        _PREFIXES.extend((p, k) for p, k in found if len(p) >= 20)
    return _PREFIXES


def _categories() -> frozenset[str]:
    if not _CATEGORIES:
        from core.safety.taxonomy import CATEGORIES

        _CATEGORIES.append(frozenset(c.id for c in CATEGORIES))
    return _CATEGORIES[0]
