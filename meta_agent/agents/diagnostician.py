"""The diagnostician: reads the rollout report, the harness source and the matching skills, and submits
structured hypotheses (pydantic-validated tool arguments; one repair on invalid output)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import regex
from pydantic import BaseModel, Field

from meta_agent.agents.base import Hypothesis, ProposalContext
from meta_agent.agents.prompts import load_prompt
from meta_agent.agents.python_tool import DESCRIPTION, PythonArgs, run_python, throwaway_session
from meta_agent.journal import VerdictRecorded
from meta_agent.llm.agent_loop import AgentSession, run_tool_loop
from meta_agent.llm.client import LLMClient
from meta_agent.llm.tools import Tool, ToolResult
from meta_agent.llm.transcript import Transcript
from meta_agent.report.rollout_report import RolloutReport
from meta_agent.skills.known import KnownRejection
from sandboxes import Mount

MAX_STEPS = 40
"""A backstop: what bounds a diagnosis is its token budget (llm.diagnostician_tokens)."""
SOURCES_CHARS = 12_000
READ_CHARS = 20_000
GREP_SECONDS = 5.0
MAX_PATTERN_CHARS = 1_000
MAX_LISTED = 300
MAX_PATH_CHARS = 1_000
MAX_READ_BYTES = 4_000_000
PYTHON_MEMORY_MB = 2048
EVIDENCE = "evidence"


class Diagnosis(BaseModel):
    summary: str = Field(description="two or three sentences: what the report shows")
    hypotheses: list[Hypothesis] = Field(description="best first")


class PathArgs(BaseModel):
    path: str = Field(".", description="relative to the harness root")


class EvidenceGrepArgs(BaseModel):
    pattern: str = Field(description="Python regular expression")


def render_report(report: RolloutReport) -> str:
    """The report's numbers, label histogram and exemplars as compact text (curves reduced to first/last step)."""
    scalars = report.model_dump(exclude={"curves", "labels", "by_difficulty", "dominant"})
    lines = [f"- {k}: {round(v, 4) if isinstance(v, float) else v}" for k, v in scalars.items()]
    if report.curves:
        first, last = report.curves[0], report.curves[-1]
        lines.append(f"- reward curve: step {first.step} {first.reward_mean} -> step {last.step} {last.reward_mean}; "
                     f"entropy {first.entropy} -> {last.entropy}")
    lines.append(f"- dominant failure modes: {', '.join(report.dominant) or 'none'}")
    lines.append("\nBy difficulty:")
    lines += [f"- difficulty {d.difficulty}: {d.rollouts} rollouts, reward {d.reward_mean:.3f}, verifier accepts "
              f"{'n/a' if d.verified_rate is None else f'{d.verified_rate:.0%}'}" for d in report.by_difficulty]
    lines.append("\nDiagnostic labels (share of rollouts) with exemplars:")
    for s in report.labels:
        lines.append(f"- {s.label}: {s.count}/{report.rollouts} ({s.share:.0%})")
        for e in s.exemplars:
            completion = e.completion[:300].replace("\n", "\\n")
            lines.append(f"    rollout {e.rollout_id} (task {e.task_id}, reward {e.reward:.2f}, "
                         f"verified {e.verified}): {completion!r}")
    return "\n".join(lines)


def render_history(history: list[VerdictRecorded], known: list[KnownRejection] | None = None) -> str:
    """This run's verdicts, then what earlier runs measured and rejected under these exact conditions."""
    lines = [f"- {h.cand_id}: {h.title} -> {h.verdict} at {h.stage}: {h.reason[:200]}" for h in history]
    lines += [f"- earlier run: {k.describe()}" for k in known or []]
    return "\n".join(lines) or "none yet"


@dataclass
class HarnessReader:
    """Read-only access to the exported harness, and to the generation's evidence folder as `evidence/...`,
    on the host (plain file reads, nothing executed; the model's grep pattern runs under a deadline)."""

    root: Path
    evidence: Path | None = None

    def _resolve(self, rel: str) -> Path | None:
        """The file `rel` names inside the harness or the evidence folder; None for anything else, including
        names the OS refuses (a NUL byte, a component over the length limit)."""
        root = self.root
        if self.evidence is not None and (rel == EVIDENCE or rel.startswith(EVIDENCE + "/")):
            root, rel = self.evidence, rel[len(EVIDENCE) + 1:]
        if len(rel) > MAX_PATH_CHARS or "\x00" in rel:
            return None
        try:
            path = (root / rel).resolve()
        except (OSError, ValueError, RuntimeError):  # RuntimeError: a symlink loop
            return None
        return path if path == root.resolve() or root.resolve() in path.parents else None

    @staticmethod
    def _walk(root: Path, prefix: str) -> list[str]:
        out = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in {".git", "__pycache__"})
            out += [prefix + str((Path(dirpath) / f).relative_to(root)) for f in sorted(filenames)]
        return out

    def files(self, evidence: bool = False) -> list[str]:
        """The harness's files; with `evidence`, the evidence folder's too (as evidence/...)."""
        out = self._walk(self.root, "")
        if evidence and self.evidence is not None:
            out += self._walk(self.evidence, EVIDENCE + "/")
        return out

    def read(self, rel: str) -> str | None:
        path = self._resolve(rel)
        try:
            if path is None or not path.is_file():
                return None
            with path.open("rb") as f:  # a bounded read: the model gets READ_CHARS of it at most
                return f.read(MAX_READ_BYTES).decode("utf-8", errors="replace")
        except OSError:
            return None

    def tools(self) -> list[Tool]:
        return [
            Tool("list_files", "List the harness files, or the evidence folder's (path evidence/...).", PathArgs,
                 self._list),
            Tool("read_file", "Read one file of the harness or of the evidence folder (evidence/...).", PathArgs,
                 self._read),
            Tool("grep", "Search the harness and the evidence folder for a regular expression.", EvidenceGrepArgs,
                 self._grep),
        ]

    def _list(self, a: PathArgs) -> ToolResult:
        prefix = "" if a.path in (".", "") else a.path.rstrip("/") + "/"
        found = [f for f in self.files(evidence=bool(prefix)) if f.startswith(prefix)]
        more = f"\n[{len(found) - MAX_LISTED} more]" if len(found) > MAX_LISTED else ""
        return ToolResult("\n".join(found[:MAX_LISTED]) + more if found else f"nothing under {a.path}")

    def _read(self, a: PathArgs) -> ToolResult:
        text = self.read(a.path)
        if text is None:
            return ToolResult(f"{a.path} is not a file of the harness or the evidence folder (list_files shows "
                              "what is)", ok=False)
        return ToolResult(text[:READ_CHARS])

    def _grep(self, a: EvidenceGrepArgs) -> ToolResult:
        """The model's pattern runs here, on the trusted side, so under a hard deadline for the whole
        search (the `regex` engine checks it while matching): a catastrophic pattern costs seconds, not the run."""
        try:
            rx = regex.compile(a.pattern[:MAX_PATTERN_CHARS])
        except regex.error as e:
            return ToolResult(f"invalid regular expression: {e}", ok=False)
        deadline = time.monotonic() + GREP_SECONDS
        hits: list[str] = []
        try:
            for f in self.files(evidence=True):
                for no, line in enumerate((self.read(f) or "").splitlines(), 1):
                    if rx.search(line, timeout=max(deadline - time.monotonic(), 0.001)):
                        hits.append(f"{f}:{no}: {line[:300]}")
                        if len(hits) >= 200:
                            return ToolResult("\n".join(hits))
        except TimeoutError:
            return ToolResult(f"the search took over {GREP_SECONDS:.0f} s and was stopped; use a simpler pattern"
                              + ("\npartial hits:\n" + "\n".join(hits) if hits else ""), ok=False)
        return ToolResult("\n".join(hits) or "no match")


def key_sources(reader: HarnessReader, domain: str) -> str:
    """The files a diagnosis usually needs, whole, within a character budget."""
    wanted = ["harness.yaml", f"harness/{domain}/rewards.py", f"harness/{domain}/diagnostics.py", "harness/filters.py"]
    out, used = [], 0
    for rel in wanted:
        text = reader.read(rel)
        if text is None or used + len(text) > SOURCES_CHARS:
            continue
        used += len(text)
        out.append(f"## {rel}\n```\n{text.rstrip()}\n```")
    return "\n\n".join(out) or "(none found; use the tools)"


def evidence_text(folder: Path | None) -> str:
    if folder is None or not (folder / "README.md").is_file():
        return "none this generation"
    counts = {d.name: sum(1 for _ in d.iterdir()) for d in folder.iterdir() if d.is_dir()}
    listing = ", ".join(f"{name}/ ({n} entries)" for name, n in sorted(counts.items()))
    return f"{(folder / 'README.md').read_text(encoding='utf-8').strip()}\n\nFolders: {listing or 'none'}"


@contextmanager
def python_session(ctx: ProposalContext) -> Iterator[list[Tool]]:
    """The `run_python` tool, in a sandbox session that sees the harness and the evidence read-only and
    writes only a throwaway folder; no tool when the context has no sandbox."""
    if ctx.sandbox is None:
        yield []
        return
    mounts = [Mount(ctx.harness_dir.resolve())] + ([Mount(ctx.evidence_dir.resolve())] if ctx.evidence_dir else [])
    env = {"EVIDENCE": str(ctx.evidence_dir.resolve()) if ctx.evidence_dir else ""}
    with throwaway_session(ctx.sandbox, mounts, PYTHON_MEMORY_MB) as session:
        yield [Tool("run_python", DESCRIPTION, PythonArgs,
                    lambda a: run_python(session, a.code, cwd=ctx.harness_dir.resolve(), env=env))]


class Diagnostician:
    def __init__(self, client: LLMClient, transcripts: Path, max_tokens: int | None = None) -> None:
        self.client = client
        self.transcripts = transcripts
        self.max_tokens = max_tokens

    def diagnose(self, ctx: ProposalContext, k: int, skills_text: str, skill_names: set[str]) -> list[Hypothesis]:
        """Up to k validated hypotheses; [] (with the reason in the transcript) when the model fails to deliver."""
        scope = f"g{ctx.generation}"
        transcript = Transcript(self.transcripts / f"{scope}-diagnostician.jsonl", agent="diagnostician",
                                model=self.client.model, meta={"run": ctx.run_id, "generation": ctx.generation, "k": k})
        reader = HarnessReader(ctx.harness_dir, ctx.evidence_dir)
        user = load_prompt("diagnostician_user", generation=ctx.generation, run_id=ctx.run_id, domain=ctx.domain, k=k,
                           report=render_report(ctx.report), files="\n".join(reader.files()),
                           sources=key_sources(reader, ctx.domain), skills=skills_text or "none match",
                           history=render_history(ctx.history, ctx.known), evidence=evidence_text(ctx.evidence_dir))
        session = AgentSession(self.client, transcript, agent="diagnostician", scope=scope,
                               system=load_prompt("diagnostician_system", k=k), user=user)
        submit = Tool("submit_hypotheses", f"Submit the diagnosis: at most {k} hypotheses, best first. Ends the "
                                           f"session.", Diagnosis, lambda d: ToolResult("received", done=True, value=d))
        with python_session(ctx) as python:
            result = run_tool_loop(session, [*reader.tools(), *python, submit], max_steps=MAX_STEPS,
                                   max_tokens=self.max_tokens,
                                   nudge="Continue: read what you need, then call submit_hypotheses.",
                                   finish="Call submit_hypotheses now with what you have found.")
        if not result.finished:
            transcript.end(False, f"no diagnosis: {result.reason}")
            return []
        diagnosis: Diagnosis = result.value
        hypotheses = []
        for h in diagnosis.hypotheses[:k]:
            unknown = [s for s in h.skills_used if s not in skill_names]
            if unknown:
                transcript.note(f"dropped unknown skills {unknown} from {h.title!r}")
            hypotheses.append(h.model_copy(update={"skills_used": [s for s in h.skills_used if s in skill_names]}))
        if len(diagnosis.hypotheses) > k:
            transcript.note(f"kept the first {k} of {len(diagnosis.hypotheses)} hypotheses")
        transcript.end(True, json.dumps([h.title for h in hypotheses]))
        return hypotheses
