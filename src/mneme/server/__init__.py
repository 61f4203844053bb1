"""The HTTP app of mneme: REST routes for memories and sessions, and the admin page."""

from mneme.server.app import create_app

__all__ = ["create_app"]
