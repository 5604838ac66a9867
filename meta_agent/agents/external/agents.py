"""The external coding agents meta-agent can hand a hypothesis to, and how each one is started.

Each agent runs inside the candidate's sandbox (see `sandbox_launch`), configured to talk to
`http://127.0.0.1:{port}<prefix>`, which the relay forwards to the user's endpoint with the real key.
npm agents live under `<venv>/coders` (`make setup` installs them), inside the venv the sandbox
already mounts read-only; `META_AGENT_CODERS_DIR` points elsewhere.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from meta_agent import inside
from meta_agent.agents.external.relay import Upstream
from meta_agent.coders import ExternalCoderName
from meta_agent.config import ConfigFileError

ANTHROPIC = "https://api.anthropic.com"
OPENAI = "https://api.openai.com/v1"
NPM_PACKAGES = {"claude-code": "@anthropic-ai/claude-code", "codex": "@openai/codex"}
CLI_PATHS = {"claude-code": "node_modules/.bin/claude", "codex": "node_modules/.bin/codex"}


def coders_dir() -> Path:
    return Path(os.environ.get("META_AGENT_CODERS_DIR") or Path(sys.prefix) / "coders")


@dataclass(frozen=True)
class Launch:
    """What `sandbox_launch` runs: `{port}` anywhere in it becomes the relay's port in the sandbox."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)


def provider_model(model: str) -> tuple[str, str]:
    """('anthropic' | 'openai', bare model name) of a litellm model name."""
    provider, _, name = model.partition("/")
    if not name:
        return ("anthropic" if model.startswith("claude") else "openai"), model
    if provider in ("anthropic", "openai"):
        return provider, name
    raise ConfigFileError(f"external coders speak the OpenAI or Anthropic API; {model!r} is neither: use "
                          f"anthropic/NAME or openai/NAME (with --api-base for an OpenAI-compatible server)")


def upstream_for(provider: str, api_base: str | None) -> Upstream:
    if provider == "anthropic":
        return Upstream(api_base or ANTHROPIC, "x-api-key", os.environ.get("ANTHROPIC_API_KEY"))
    return Upstream(api_base or OPENAI, "authorization", os.environ.get("OPENAI_API_KEY"))


def reachable(up: Upstream, timeout_s: float = 5.0) -> str | None:
    """None when a TCP connection to the endpoint opens; else why not."""
    parts = urlsplit(up.base)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "", port), timeout=timeout_s):
            return None
    except OSError as e:
        return f"{parts.hostname}:{port}: {e}"


class ExternalAgent:
    """One kind of external coder: the API it speaks, whether it is installed, and how to start it."""

    name: ExternalCoderName
    provider: str | None = None
    """The API it speaks; None: whichever the model's provider is (mini-swe-agent, through litellm)."""

    def __init__(self, model: str) -> None:
        provider, bare = provider_model(model)
        if self.provider is not None and provider != self.provider and "/" in model:
            raise ConfigFileError(f"--coder {self.name} speaks the {self.provider} API, but the coder model is "
                                  f"{model!r}; pass --coder-model {self.provider}/NAME")
        self.model, self.bare = model, bare
        self.api = self.provider or provider

    def missing(self) -> str | None:
        """None when installed; else what to run to install it."""
        return None

    def launch(self, task: str, base_url: str, home: Path, steps: int, timeout_s: float) -> Launch:
        raise NotImplementedError

    def summary(self, stdout: str) -> tuple[bool, str]:
        """(whether the agent says it finished, its final words) from what it printed."""
        return True, stdout.strip()[-2000:]


class MiniSweAgent(ExternalAgent):
    name = "mini-swe-agent"

    def missing(self) -> str | None:
        if importlib.util.find_spec("minisweagent") is None:
            return "mini-swe-agent is not installed in meta-agent's venv: run `make setup`"
        return None

    def launch(self, task: str, base_url: str, home: Path, steps: int, timeout_s: float) -> Launch:
        spec = {"model": f"{self.api}/{self.bare}", "api_base": base_url, "task": task, "steps": steps,
                "command_timeout_s": min(300, timeout_s)}
        source = inside.source("mini_driver.py")  # not imported here
        return Launch(argv=[sys.executable, "-c", source, json.dumps(spec)],
                      env={"LITELLM_LOCAL_MODEL_COST_MAP": "True", "MSWEA_COST_TRACKING": "ignore_errors",
                           "MSWEA_SILENT_STARTUP": "1", "MSWEA_CONFIGURED": "true",
                           "MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT": "3"})

    def summary(self, stdout: str) -> tuple[bool, str]:
        try:
            result = json.loads(stdout.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            return False, stdout.strip()[-2000:]
        status = str(result.get("exit_status"))
        return status == "Submitted", f"mini-swe-agent: {status} after {result.get('calls')} model calls. " \
                                      f"{str(result.get('submission') or '').strip()[:1500]}"


class NpmAgent(ExternalAgent):
    def cli(self) -> Path:
        return coders_dir() / CLI_PATHS[self.name]

    def missing(self) -> str | None:
        if not self.cli().exists():
            return (f"{NPM_PACKAGES[self.name]} is not installed at {coders_dir()}: run `make setup` "
                    f"(it runs `npm install` there; needs node >= 18)")
        return None


class ClaudeCode(NpmAgent):
    """Claude Code in print mode. As root it needs IS_SANDBOX=1 to skip permission prompts; its
    non-essential traffic (telemetry, update checks, title calls) is switched off, so the model
    endpoint is all it asks for."""

    name = "claude-code"
    provider = "anthropic"

    def launch(self, task: str, base_url: str, home: Path, steps: int, timeout_s: float) -> Launch:
        return Launch(
            argv=[str(self.cli()), "-p", task, "--output-format", "json", "--dangerously-skip-permissions",
                  "--model", self.bare, "--max-turns", str(steps), "--no-session-persistence"],
            env={"ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": "held-by-meta-agent", "IS_SANDBOX": "1",
                 "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
                 "DISABLE_ERROR_REPORTING": "1", "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_MAX_RETRIES": "2",
                 "CLAUDE_CONFIG_DIR": str(home / "claude-config"), "API_TIMEOUT_MS": str(int(timeout_s * 1000))})

    def summary(self, stdout: str) -> tuple[bool, str]:
        try:
            result = json.loads(stdout.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            return False, stdout.strip()[-2000:]
        if not isinstance(result, dict):
            return False, stdout.strip()[-2000:]
        words = str(result.get("result") or "")
        turns = result.get("num_turns")
        if result.get("is_error") or result.get("subtype") != "success":
            return False, f"{result.get('subtype')} after {turns} turns: {words}"
        return True, f"claude-code, {turns} turns: {words}"


CODEX_CONFIG = """# written by meta-agent for one coder session (values are JSON-quoted, valid TOML strings)
model = {model}
model_provider = "meta-agent-relay"
check_for_update_on_startup = false

[model_providers.meta-agent-relay]
name = "meta-agent relay"
base_url = {base_url}
env_key = "OPENAI_API_KEY"
wire_api = "responses"
request_max_retries = 2
stream_max_retries = 2

[analytics]
enabled = false
[feedback]
enabled = false
[otel]
exporter = "none"
trace_exporter = "none"
metrics_exporter = "none"
[features]
plugins = false
apps = false
remote_plugin = false
"""


class Codex(NpmAgent):
    """Codex CLI's `exec` mode over the responses API, with its own sandbox off (meta-agent's is the one
    that counts) and plugins, analytics and telemetry off, so it asks nothing of any other host."""

    name = "codex"
    provider = "openai"

    def launch(self, task: str, base_url: str, home: Path, steps: int, timeout_s: float) -> Launch:
        codex_home = home / "codex-home"
        return Launch(
            argv=[str(self.cli()), "exec", "--strict-config", "--skip-git-repo-check", "--ephemeral",
                  "--dangerously-bypass-approvals-and-sandbox", "--json", task],
            env={"CODEX_HOME": str(codex_home), "OPENAI_API_KEY": "held-by-meta-agent"},
            files={str(codex_home / "config.toml"): CODEX_CONFIG.format(model=json.dumps(self.bare),
                                                                        base_url=json.dumps(base_url))})

    def summary(self, stdout: str) -> tuple[bool, str]:
        events = []
        for line in stdout.splitlines():
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(event, dict):
                events.append(event)
        said = [str(e["item"].get("text", "")) for e in events if isinstance(e.get("item"), dict)
                and e["item"].get("type") == "agent_message"]
        failed = [e for e in events if e.get("type") in ("turn.failed", "error")]
        done = any(e.get("type") == "turn.completed" for e in events)
        words = said[-1] if said else ""
        if not done or any(e.get("type") == "turn.failed" for e in failed):
            detail = "; ".join(str(e.get("message") or e.get("error") or "")[:300] for e in failed)
            return False, f"no completed turn ({detail or 'no events'}) {words}"
        return True, f"codex: {words}"


AGENTS: dict[str, type[ExternalAgent]] = {"mini-swe-agent": MiniSweAgent, "claude-code": ClaudeCode, "codex": Codex}


def external_agent(name: str, model: str) -> ExternalAgent:
    try:
        cls = AGENTS[name]
    except KeyError:
        raise ConfigFileError(f"unknown coder {name!r}; available: builtin, {', '.join(AGENTS)}") from None
    return cls(model)
