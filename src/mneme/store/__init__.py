"""Storage backends for long-term memory."""
