"""``medbot eval``: the design documents' evaluation (SPEC.md §9) made runnable.

One module per concern: :mod:`~bot.eval.synthea` (reading the export), :mod:`~bot.eval.scenarios`
(conversations and the facts each answer needs), :mod:`~bot.eval.conditions` (modes and the
ablation steps), :mod:`~bot.eval.runner` (running, resuming, recording), :mod:`~bot.eval.metrics`
(no-judge metrics), :mod:`~bot.eval.judge` (RAGAS-definition metrics and the judge's
calibration), :mod:`~bot.eval.statistics` (bootstrap CIs, paired t-test, Cohen's d_z) and
:mod:`~bot.eval.report` (Markdown and figures).
"""
