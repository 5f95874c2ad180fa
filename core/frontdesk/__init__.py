"""The front desk between the messaging channels and the agent (SPEC.md §8, §11 operations).

- :mod:`core.frontdesk.desk`: the :class:`~core.frontdesk.desk.Frontdesk` every channel hands
  messages to (rate limit, order, commands, the turn off the event loop, drain);
- :mod:`core.frontdesk.ordering`: per-session FIFO and the per-user rate limit;
- :mod:`core.frontdesk.intake`: what is stored and read of one message (bounded cost);
- :mod:`core.frontdesk.recovery`: turns interrupted by a crash, taken over or given up;
- :mod:`core.frontdesk.admin`: the admin commands (SPEC.md §8).
"""
