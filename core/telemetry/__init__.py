"""What the service tells its operator: Prometheus metrics (:mod:`core.telemetry.metrics`,
exposition and multiprocess files in :mod:`core.telemetry.exposition`), JSON logs
(:mod:`core.telemetry.logs`) and readiness (:mod:`core.telemetry.readiness`).

Nothing here ever carries a user id or a word of a message: labels take values from fixed
sets (channels, outcomes, nodes, LLM call kinds, triage categories, job names).
"""
