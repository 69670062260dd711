"""sessionlog: durable, searchable session history for fleets of AI agents."""
