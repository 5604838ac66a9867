"""The coder: one agent per hypothesis, editing the candidate's workspace through sandboxed tools until
selftest passes and it commits, or it gives up (or the loop stops it) with a reason."""

from __future__ import annotations

import re
from pathlib import Path

from meta_agent.agents.base import Failure, Hypothesis, Implementation, Workspace
from meta_agent.agents.coder_tools import CoderTools, Committed, GaveUp, ListArgs, ReadArgs
from meta_agent.agents.prompts import load_prompt
from meta_agent.journal_keys import slot_of_workspace
from meta_agent.llm.agent_loop import AgentSession, run_tool_loop
from meta_agent.llm.client import LLMClient
from meta_agent.llm.errors import LLMRequestError
from meta_agent.llm.transcript import Transcript
from meta_agent.skills.store import SkillSet

SKILL_CHARS = 6_000


def session_name(ws: Workspace, h: Hypothesis) -> tuple[str, str | None]:
    """(transcript file stem, ledger scope) from the loop's layout gen-NNN/cand-K, else from the title."""
    slot = slot_of_workspace(ws.path.as_posix())
    if slot:
        g, k = slot
        return f"g{g}-c{k}-coder", f"g{g}"
    slug = re.sub(r"[^a-z0-9]+", "-", h.title.lower()).strip("-")[:40] or "candidate"
    return f"coder-{slug}", None


def skills_text(skills: SkillSet, names: list[str]) -> str:
    parts = []
    for name in names:
        try:
            skill = skills.get(name)
        except KeyError:
            continue
        text = f"## skill {name}\n{skill.body.strip()}"
        if skill.apply_script is not None:
            text += f"\n\nIts apply.py (uses skillkit helpers; you edit with your own tools):\n```python\n" \
                    f"{skill.apply_script.read_text(encoding='utf-8').strip()}\n```"
        parts.append(text[:SKILL_CHARS])
    return "\n\n".join(parts) or "none"


class Coder:
    def __init__(self, client: LLMClient, transcripts: Path, skills: SkillSet, max_steps: int,
                 specialist_steps: dict[str, int] | None = None, deadline_s: float | None = None) -> None:
        self.client = client
        self.transcripts = transcripts
        self.skills = skills
        self.max_steps = max_steps
        self.specialist_steps = specialist_steps
        """None: one generalist coder; else per surface, the specialist's step budget."""
        self.deadline_s = deadline_s
        """Wall-clock seconds of one session (llm.coder_timeout_s): a slow model or slow tools end it with a reason."""

    def _role(self, h: Hypothesis) -> tuple[str, str, int]:
        """(transcript suffix, system prompt, step budget) of the coder that implements `h`."""
        if self.specialist_steps is None or h.surface is None:
            return "", load_prompt("coder_system", max_steps=self.max_steps), self.max_steps
        steps = self.specialist_steps.get(h.surface, self.max_steps)
        role = load_prompt(f"specialists/{h.surface}")
        return f"-{h.surface}", load_prompt("coder_system", max_steps=steps) + "\n\n" + role, steps

    def implement(self, h: Hypothesis, ws: Workspace, run_id: str) -> Implementation:
        tools = CoderTools(ws)
        readme = tools.read_file(ReadArgs(path="README.md"))
        user = load_prompt(
            "coder_user", run_id=run_id, title=h.title, kind=h.kind, failure_mode=h.failure_mode, evidence=h.evidence,
            intervention=h.intervention, predicted=h.predicted_text(), new_labels=", ".join(h.new_labels) or "none",
            readme=readme.text if readme.ok else "(no README.md)", files=tools.list_files(ListArgs()).text,
            skills=skills_text(self.skills, h.skills_used))
        return self._session(h, ws, run_id, tools, user)

    def repair(self, h: Hypothesis, ws: Workspace, run_id: str, failure: Failure) -> Implementation:
        """A repair turn: the workspace holds the failed attempt; the prompt leads with why it failed."""
        tools = CoderTools(ws)
        user = load_prompt(
            "coder_repair", attempt=failure.attempt, run_id=run_id, stage=failure.stage, failure=failure.reason,
            title=h.title, kind=h.kind, failure_mode=h.failure_mode, evidence=h.evidence,
            intervention=h.intervention, predicted=h.predicted_text(), new_labels=", ".join(h.new_labels) or "none",
            files=tools.list_files(ListArgs()).text)
        return self._session(h, ws, run_id, tools, user, tail=f"-repair{failure.attempt}")

    def _session(self, h: Hypothesis, ws: Workspace, run_id: str, tools: CoderTools, user: str,
                 tail: str = "") -> Implementation:
        """One coder session; its transcript is <session name><-surface of a specialist><tail>.jsonl."""
        stem, scope = session_name(ws, h)
        suffix, system, steps = self._role(h)
        transcript = Transcript(self.transcripts / f"{stem}{suffix}{tail}.jsonl", agent="coder",
                                model=self.client.model,
                                meta={"run": run_id, "hypothesis": h.title, "workspace": str(ws.path)})
        session = AgentSession(self.client, transcript, agent="coder", scope=scope, system=system, user=user)
        try:
            result = run_tool_loop(session, tools.tools(), max_steps=steps, deadline_s=self.deadline_s,
                                   nudge="Continue by calling a tool: edit, run_selftest, then commit (or give_up).")
        except LLMRequestError as e:
            transcript.end(False, str(e))
            return Implementation(ok=False, reason=f"coder: {e}")
        if not result.finished:
            transcript.end(False, result.reason)
            return Implementation(ok=False, reason=f"coder stopped: {result.reason}")
        if isinstance(result.value, GaveUp):
            transcript.end(False, f"gave up: {result.value.reason}")
            return Implementation(ok=False, reason=f"coder gave up: {result.value.reason}")
        done: Committed = result.value
        transcript.end(True, f"commit: {done.summary}")
        return Implementation(ok=True, summary=f"{done.summary}\n\n(LLM coder, {result.steps} tool calls; "
                                               f"changed {', '.join(done.changed)})")
