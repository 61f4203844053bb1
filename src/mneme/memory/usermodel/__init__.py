"""The user model: what the agent knows about a person, kept current by the write path and consulted on every turn."""
