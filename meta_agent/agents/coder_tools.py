"""The coder's tools. Each acts only through the workspace's sandbox session; none touches the host's files.

File operations run meta_agent/inside/coder_sandbox.py inside the session; `run_selftest` and `run_replay` run the
harness verbs there. Paths are checked on the host first: an edit to a protected path (the entry
point, the boundary adapter) is refused before anything runs, since the static stage would reject
the candidate anyway. `commit` ends the loop only when files changed and selftest passes on them.
"""

from __future__ import annotations

import json
import posixpath
import re
import sys
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from meta_agent import inside
from meta_agent.agents.base import Workspace
from meta_agent.agents.python_tool import DESCRIPTION, PythonArgs, run_python
from meta_agent.gitops import PROTECTED_PATHS
from meta_agent.llm.agent_loop import truncate
from meta_agent.llm.tools import Tool, ToolResult

SANDBOX_SCRIPT = inside.source("coder_sandbox.py")
MAX_EDIT_CHARS = 100_000
"""Edits travel as one argv element (Linux caps one at 128 KiB); no sensible harness edit is bigger."""
FILE_OP_TIMEOUT_S = 60


class NoArgs(BaseModel):
    pass


class ListArgs(BaseModel):
    path: str = Field(".", description="directory relative to the harness root")


class ReadArgs(BaseModel):
    path: str = Field(description="file relative to the harness root, e.g. harness/math/rewards.py")
    start_line: int = Field(1, ge=1)
    end_line: int | None = Field(None, ge=1, description="inclusive; default: end of file")


class GrepArgs(BaseModel):
    pattern: str = Field(description="Python regular expression, matched per line")
    path: str = Field(".", description="file or directory to search")


class ReplaceArgs(BaseModel):
    path: str
    search: str = Field(description="exact text to replace; must occur exactly once in the file")
    replace: str


class WriteArgs(BaseModel):
    path: str
    content: str = Field(description="the whole new content of the file")


class PatchArgs(BaseModel):
    diff: str = Field(description="unified diff with '--- a/PATH' / '+++ b/PATH' headers and @@ hunks")


class CommitArgs(BaseModel):
    summary: str = Field(min_length=10, description="what you changed and why, for the commit message body")


class GiveUpArgs(BaseModel):
    reason: str = Field(min_length=5, description="why the hypothesis cannot be implemented")


@dataclass
class Committed:
    summary: str
    changed: list[str]


@dataclass
class GaveUp:
    reason: str


def refuse_path(path: str) -> str | None:
    """Why the coder may not edit `path`, or None."""
    p = posixpath.normpath(path.strip())
    if p.startswith("/") or p == ".." or p.startswith("../"):
        return f"{path}: use a path relative to the harness root"
    if p == ".git" or p.startswith(".git/"):
        return f"{path}: git metadata is meta-agent's; edit harness files only"
    if p in PROTECTED_PATHS:
        return (f"{p} is protected (entry point and boundary adapter; protected: {', '.join(PROTECTED_PATHS)}): "
                f"meta-agent rejects any candidate that changes it. Make the change elsewhere.")
    return None


def diff_paths(diff: str) -> list[str]:
    found = []
    for m in re.finditer(r"^(?:---|\+\+\+) (\S+)", diff, flags=re.MULTILINE):
        name = m.group(1)
        if name != "/dev/null":
            found.append(name[2:] if name.startswith(("a/", "b/")) else name)
    return found


@dataclass
class CoderTools:
    """The tool set of one coder session on one workspace."""

    ws: Workspace
    selftest_timeout_s: float = 600
    output_chars: int = 12_000
    changed: set[str] = field(default_factory=set)
    selftest_ok: bool = False
    """selftest passed on the current files (reset by every edit)."""

    def tools(self) -> list[Tool]:
        return [
            Tool("list_files", "List the harness files (recursively) with their sizes.", ListArgs, self.list_files),
            Tool("read_file", "Read a file with line numbers, optionally a line range.", ReadArgs, self.read_file),
            Tool("grep", "Search files for a regular expression; prints path:line: text.", GrepArgs, self.grep),
            Tool("replace_text", "Replace one exact, unique occurrence of `search` in a file.", ReplaceArgs,
                 self.replace_text),
            Tool("write_file", "Create a file or replace its whole content.", WriteArgs, self.write_file),
            Tool("apply_patch", "Apply a unified diff (one or more files). All hunks apply or none.", PatchArgs,
                 self.apply_patch),
            Tool("run_python", DESCRIPTION, PythonArgs, self.run_python),
            Tool("run_selftest", "Run the harness's own tests (`python -m harness selftest`, pytest).", NoArgs,
                 self.run_selftest),
            Tool("run_replay", "Re-score this generation's rollouts and the hacking probes with the edited harness "
                               "and summarise rewards against the sealed verifier's verdicts.", NoArgs,
                 self.run_replay),
            Tool("commit", "Finish: hand the edited files to meta-agent, which commits them on the candidate branch. "
                           "Runs selftest first if it has not passed since the last edit.", CommitArgs, self.commit),
            Tool("give_up", "Finish without a change, saying why.", GiveUpArgs, self.give_up),
        ]

    def _op(self, op: str, **args: object) -> ToolResult:
        env = {"CODER_PROTECTED": json.dumps(sorted(PROTECTED_PATHS))}
        if self.ws.evidence:
            env["CODER_EVIDENCE"] = str(self.ws.evidence.resolve())
        result = self.ws.session.run([sys.executable, "-c", SANDBOX_SCRIPT, op, json.dumps(args)],
                                     timeout=FILE_OP_TIMEOUT_S, env=env)
        lines = result.stdout.strip().splitlines()
        try:
            data = json.loads(lines[-1]) if lines else None
        except json.JSONDecodeError:
            data = None
        if not isinstance(data, dict):
            return ToolResult(f"{op} failed in the sandbox: {result.describe_failure()}", ok=False)
        if data.get("changed"):
            self.changed.update(data["changed"])
            self.selftest_ok = False
        return ToolResult(str(data.get("text", "")), ok=bool(data.get("ok")))

    def _edit(self, paths: list[str], op: str, size: int, **args: object) -> ToolResult:
        if size > MAX_EDIT_CHARS:
            return ToolResult(f"edit of {size:,} characters is over the {MAX_EDIT_CHARS:,} limit; edit in parts",
                              ok=False)
        refusals = [r for r in map(refuse_path, paths) if r]
        if refusals:
            return ToolResult("refused: " + "; ".join(refusals), ok=False)
        return self._op(op, **args)

    def list_files(self, a: ListArgs) -> ToolResult:
        return self._op("list", path=a.path)

    def read_file(self, a: ReadArgs) -> ToolResult:
        return self._op("read", path=a.path, start_line=a.start_line, end_line=a.end_line)

    def grep(self, a: GrepArgs) -> ToolResult:
        return self._op("grep", pattern=a.pattern, path=a.path)

    def replace_text(self, a: ReplaceArgs) -> ToolResult:
        return self._edit([a.path], "replace", len(a.search) + len(a.replace), path=a.path, search=a.search,
                          replace=a.replace)

    def write_file(self, a: WriteArgs) -> ToolResult:
        return self._edit([a.path], "write", len(a.content), path=a.path, content=a.content)

    def apply_patch(self, a: PatchArgs) -> ToolResult:
        paths = diff_paths(a.diff)
        if not paths:
            return ToolResult("no '--- a/PATH' / '+++ b/PATH' headers found in the diff", ok=False)
        return self._edit(paths, "patch", len(a.diff), diff=a.diff)

    def run_python(self, a: PythonArgs) -> ToolResult:
        """Analysis code, in the workspace's session. Files it changes count as edits (tracked for commit,
        selftest due again), so it is no way around the edit tools' checks: those run again at commit."""
        before = self._op("fingerprint")
        env = {"EVIDENCE": str(self.ws.evidence.resolve()) if self.ws.evidence else ""}
        result = run_python(self.ws.session, a.code, cwd=self.ws.path, env=env)
        after = self._op("fingerprint")
        if before.ok and after.ok and before.text != after.text:
            old, new = json.loads(before.text), json.loads(after.text)
            touched = sorted(p for p in old.keys() | new.keys() if old.get(p) != new.get(p))
            self.changed.update(touched)
            self.selftest_ok = False
            result.text += f"\n[it changed {', '.join(touched[:20])}: tracked as edits]"
        return result

    def run_selftest(self, _a: NoArgs | None = None) -> ToolResult:
        result = self.ws.session.run([sys.executable, "-m", "harness", "selftest"], timeout=self.selftest_timeout_s,
                                     env={"HARNESS_COMMIT": "candidate"})
        self.selftest_ok = result.ok
        output = truncate((result.stdout + "\n" + result.stderr).strip(), self.output_chars)
        if result.ok:
            head = "selftest passed"
        elif result.timed_out:
            head = f"selftest FAILED: timed out after {result.wall_time:.0f} s"
        else:
            head = f"selftest FAILED (exit code {result.exit_code}{', out of memory' if result.oom_killed else ''})"
        return ToolResult(f"{head}\n{output}", ok=result.ok)

    def run_replay(self, _a: NoArgs) -> ToolResult:
        ws = self.ws
        if ws.rollouts is None or ws.tasks is None:
            return ToolResult("no rollouts are available for replay in this workspace", ok=False)
        out = ws.session.scratch / "replay.jsonl"
        result = ws.session.run([sys.executable, "-m", "harness", "replay", "--rollouts", str(ws.rollouts),
                                 "--tasks", str(ws.tasks), "--out", str(out)], timeout=self.selftest_timeout_s,
                                env={"HARNESS_COMMIT": "candidate"})
        if not result.ok:
            return ToolResult(f"replay failed: {result.describe_failure()}", ok=False)
        return self._op("replay_summary", replay=str(out), rollouts=str(ws.rollouts))

    def commit(self, a: CommitArgs) -> ToolResult:
        if not self.changed:
            return ToolResult("nothing to commit: no file was changed yet (or call give_up)", ok=False)
        if not self.selftest_ok:
            test = self.run_selftest()
            if not test.ok:
                return ToolResult("commit refused, selftest fails on the edited files; fix them or give_up.\n"
                                  + test.text, ok=False)
        return ToolResult("committed; meta-agent will backtest the candidate", done=True,
                          value=Committed(summary=a.summary, changed=sorted(self.changed)))

    def give_up(self, a: GiveUpArgs) -> ToolResult:
        return ToolResult("ok, giving up", done=True, value=GaveUp(reason=a.reason))
