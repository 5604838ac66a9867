"""An external coding agent (mini-swe-agent, Claude Code, Codex CLI) as meta-agent's coder.

Same contract as the built-in `Coder`: given a hypothesis and a workspace (an export of main inside
an open sandbox session), leave edited files there and say whether it worked. The agent runs inside
that session; its only way out is the `ModelRelay`, which books its tokens and dollars against the
run's budgets and writes its transcript. meta-agent, not the agent, makes the commit, and the
backtest, not the agent's own account, decides.
"""

from __future__ import annotations

import atexit
import json
import shutil
import sys
import tempfile
from pathlib import Path

from meta_agent import inside
from meta_agent.agents.base import Failure, Hypothesis, Implementation, Workspace
from meta_agent.agents.coder import session_name
from meta_agent.agents.external.agents import ExternalAgent, Launch, external_agent, reachable, upstream_for
from meta_agent.agents.external.relay import ModelRelay, Upstream
from meta_agent.agents.prompts import load_prompt
from meta_agent.config import ConfigFileError, LLMSettings
from meta_agent.llm.accounting import Ledger
from meta_agent.llm.budget import LLMBudget
from meta_agent.llm.errors import BudgetExceeded
from meta_agent.llm.text import bound
from sandboxes import Mount

OUTPUT_CHARS = 20_000
SUMMARY_CHARS = 2_000
STEP_TOKENS = 40_000
"""A session's token cap is its step budget times this: a generous ceiling, not a target."""


class ExternalCoder:
    def __init__(self, agent: ExternalAgent, upstream: Upstream, *, ledger: Ledger, budget: LLMBudget,
                 transcripts: Path, max_steps: int, timeout_s: float) -> None:
        self.agent, self.upstream = agent, upstream
        self.ledger, self.budget = ledger, budget
        self.transcripts = transcripts
        self.max_steps, self.timeout_s = max_steps, timeout_s
        # One short-named folder for the run's relay sockets, mounted read-only into each coder session.
        self.socket_dir = Path(tempfile.mkdtemp(prefix="ma-relay-"))
        self.socket_dir.chmod(0o755)
        atexit.register(shutil.rmtree, self.socket_dir, True)

    def mounts(self) -> list[Mount]:
        """What a coder session must see besides the workspace: the relay's socket folder."""
        return [Mount(self.socket_dir)]

    def implement(self, h: Hypothesis, ws: Workspace, run_id: str) -> Implementation:
        task = load_prompt("external_task", run_id=run_id, title=h.title, kind=h.kind, failure_mode=h.failure_mode,
                           evidence=h.evidence, intervention=h.intervention, predicted=h.predicted_text(),
                           new_labels=", ".join(h.new_labels) or "none", skills=", ".join(h.skills_used) or "none")
        return self._session(h, ws, run_id, task, tail="")

    def repair(self, h: Hypothesis, ws: Workspace, run_id: str, failure: Failure) -> Implementation:
        task = load_prompt("external_repair", attempt=failure.attempt, run_id=run_id, stage=failure.stage,
                           failure=failure.reason, title=h.title, kind=h.kind, failure_mode=h.failure_mode,
                           intervention=h.intervention, predicted=h.predicted_text())
        return self._session(h, ws, run_id, task, tail=f"-repair{failure.attempt}")

    def prompt(self, ws: Workspace, task: str) -> str:
        evidence = (f"{ws.evidence.resolve()} (README.md there says what is where)" if ws.evidence
                    else "(none this generation)")
        rollouts = ws.rollouts.resolve() if ws.rollouts else "(none)"
        tasks = ws.tasks.resolve() if ws.tasks else "(none)"
        return load_prompt("external_coder", agent=self.agent.name, evidence=evidence, rollouts=rollouts,
                           tasks=tasks, task=task)

    def _session(self, h: Hypothesis, ws: Workspace, run_id: str, task: str, tail: str) -> Implementation:
        stem, scope = session_name(ws, h)
        transcript = self.transcripts / f"{stem}-{self.agent.name}{tail}.jsonl"
        relay = ModelRelay(self.upstream, ledger=self.ledger, budget=self.budget, agent="coder", scope=scope,
                           transcript=transcript, model=self.agent.model, socket_dir=self.socket_dir,
                           socket_name=f"{stem}{tail}.sock",
                           max_requests=self.max_steps * 2, max_tokens=self.max_steps * STEP_TOKENS)
        relay.event({"type": "session", "agent": "coder", "coder": self.agent.name, "model": self.agent.model,
                     "meta": {"run": run_id, "hypothesis": h.title, "workspace": str(ws.path)}})
        base_url = f"http://127.0.0.1:{{port}}{self.upstream.prefix}"
        launch = self.agent.launch(self.prompt(ws, task), base_url, ws.session.scratch, self.max_steps,
                                   self.timeout_s)
        with relay:
            result = ws.session.run([sys.executable, "-c", inside.source("sandbox_launch.py"),
                                     json.dumps(self._spec(launch, relay))], timeout=self.timeout_s + 60)
        outcome = self._outcome(result.stdout, result.describe_failure() if not result.ok else "")
        relay.event({"type": "end", "ok": outcome.ok, "outcome": outcome.reason or outcome.summary})
        exhausted = self.budget.reason(self.ledger)
        if exhausted:  # the run stops between steps, as with the built-in coder; resume redoes this candidate
            raise BudgetExceeded(exhausted)
        if relay.stats.requests == 0 and outcome.ok:
            return Implementation(ok=False, reason=f"{self.agent.name} made no model request: {outcome.summary}")
        return outcome

    def _spec(self, launch: Launch, relay: ModelRelay) -> dict[str, object]:
        return {"socket": str(relay.socket_path), "argv": launch.argv, "env": launch.env, "files": launch.files,
                "timeout_s": self.timeout_s, "output_chars": OUTPUT_CHARS}

    def _outcome(self, stdout: str, sandbox_failure: str) -> Implementation:
        name = self.agent.name
        try:
            ran = json.loads(stdout.strip().splitlines()[-1])
            code, out, err = int(ran["exit_code"]), str(ran["stdout"]), str(ran["stderr"])
        except (ValueError, IndexError, KeyError, TypeError, RecursionError):
            return Implementation(ok=False, reason=f"{name} did not run: {bound(sandbox_failure or stdout, 2_000)}")
        if code != 0:
            detail = bound((err.strip() or out.strip()), 2_000)
            stopped = "ran out of time" if code == 124 else f"exited with code {code}"
            return Implementation(ok=False, reason=f"{name} {stopped}: {detail}")
        finished, words = self.agent.summary(out)
        if not finished:
            return Implementation(ok=False, reason=f"{name} did not finish: {bound(words, 1_000)}")
        return Implementation(ok=True, summary=f"{bound(words.strip(), SUMMARY_CHARS)}\n\n({name} coder)")


def external_coder(settings: LLMSettings, ledger: Ledger, budget: LLMBudget, transcripts: Path) -> ExternalCoder:
    """The coder `settings.coder` names, checked before any training: installed, endpoint reachable, key set."""
    model = settings.coder_model or settings.model or ""
    agent = external_agent(settings.coder, model)
    problem = agent.missing()
    if problem:
        raise ConfigFileError(f"--coder {agent.name}: {problem}")
    api_base = settings.coder_api_base or settings.api_base
    upstream = upstream_for(agent.api, api_base)
    if upstream.key is None and api_base is None:
        var = "ANTHROPIC_API_KEY" if agent.api == "anthropic" else "OPENAI_API_KEY"
        raise ConfigFileError(f"--coder {agent.name} with {model}: {var} is not set; export it, or point --api-base "
                              f"at a server that needs no key (the key stays outside the sandbox either way)")
    unreachable = reachable(upstream)
    if unreachable:
        raise ConfigFileError(f"--coder {agent.name}: the model endpoint {upstream.base} cannot be reached "
                              f"({unreachable}); check --api-base and this machine's network")
    return ExternalCoder(agent, upstream, ledger=ledger, budget=budget, transcripts=transcripts,
                         max_steps=settings.max_coder_steps, timeout_s=settings.coder_timeout_s)
