"""The consumer-health question-type classifier: the model and its inference
(:mod:`core.qtype.model`), its training data (:mod:`core.qtype.dataset`), training and
evaluation (:mod:`core.qtype.train`, ``medbot qtype``), and ``data/`` (the team's frames
and fillers, the shipped weights)."""
