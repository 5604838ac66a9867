"""The coder names `--coder` accepts: the built-in tool loop, or an external coding agent
(meta_agent/agents/external). Only names, so the config and the CLI import them at start-up."""

from typing import Literal

ExternalCoderName = Literal["mini-swe-agent", "claude-code", "codex"]
CoderName = Literal["builtin", "mini-swe-agent", "claude-code", "codex"]
