"""Entry points: the ``medbot`` CLI, the service runner, the scheduler."""
