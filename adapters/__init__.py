"""Channel adapters: they translate platform messages to and from the core's message types."""
