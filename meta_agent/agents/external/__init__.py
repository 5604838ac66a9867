"""External coding agents (mini-swe-agent, Claude Code, Codex CLI) as meta-agent's coder, in the sandbox.

Only the names live here (imported by the config and the CLI at start-up); the agents are in `agents`.
"""

from typing import Literal

ExternalCoderName = Literal["mini-swe-agent", "claude-code", "codex"]
CoderName = Literal["builtin", "mini-swe-agent", "claude-code", "codex"]
"""`--coder`: the built-in tool loop, or an external coding agent."""
