"""Error types shared across meta-agent's modules (no imports from the rest of the package)."""

from __future__ import annotations


class UserError(Exception):
    """Bad input or a state the user can fix (a missing file, a run that cannot be resumed here).

    The CLI prints it as one line with no traceback; any other exception is a bug and shows one.
    """


class ContractError(UserError, ValueError):
    """A file written by sandboxed code does not match the contract (or is not plain data)."""


class RunDirError(UserError, FileNotFoundError):
    """A run directory is missing, is not the kind the command needs, or already holds a run."""


class BudgetExhausted(RuntimeError):
    """A hard budget ran out (or the LLM provider stopped answering); the run stopped between steps and
    can be resumed. Never a candidate's failure: it stops the run cleanly."""


def failure_text(e: BaseException, limit: int = 2000) -> str:
    """`Type: message` of an exception, bounded: it goes into the journal, a verdict and a git note."""
    text = f"{type(e).__name__}: {e}"
    return text if len(text) <= limit else text[:limit] + " [...]"
