"""External coding agents (mini-swe-agent, Claude Code, Codex CLI) as meta-agent's coder, in the sandbox."""
