"""The one error type of the SWE task builder, so the CLI can print it as a single actionable line."""

from __future__ import annotations

from meta_agent.errors import UserError


class SweTaskError(UserError, RuntimeError):
    """A task could not be built, imported, checked out or evaluated; the message says what to do."""
