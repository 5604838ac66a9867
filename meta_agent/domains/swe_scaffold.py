"""The sealed evaluator's fixed agent scaffold for SWE: one shell command per turn, greedy decoding.

Owned by meta-agent, not evolvable: the same prompt, command format, turn cap and observation
cap for every policy it scores. Every command runs in a fresh sandbox session on the episode's
checkout; the final diff is computed inside that sandbox too, so meta-agent never runs git on a
directory the policy could have tampered with (hooks, config).
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from meta_agent.domains.settings import ScaffoldSettings
from meta_agent.swe.instance import SweInstance
from meta_agent.swe.instance_session import GIT, open_instance_session
from sandboxes import Limits, Sandbox, Session

SYSTEM = (
    "You are a software engineer fixing a bug in a Python repository. Each reply contains exactly one "
    "shell command in a ```bash block; you will see its output. Explore, edit files (e.g. with sed or "
    "python), run the tests, and when the fix is done reply with ```bash\nsubmit\n```."
)
FENCE = re.compile(r"```(?:bash|sh|shell)?[ \t]*\n(.*?)```", re.DOTALL)
STATEMENT_CHARS = 1500
MAX_DIFF_BYTES = 500_000


@dataclass
class EvalEpisode:
    instance: SweInstance
    workdir: Path
    session: Session
    messages: list[dict[str, str]]
    transcript: list[str] = field(default_factory=list)
    end_reason: str = ""
    turns: int = 0

    def diff(self) -> str:
        res = self.session.run(["bash", "-c", f"{GIT} add -A >/dev/null 2>&1; {GIT} diff --cached"], timeout=60)
        return res.stdout if len(res.stdout) < MAX_DIFF_BYTES else ""


def first_messages(instance: SweInstance) -> list[dict[str, str]]:
    statement = instance.problem_statement
    if len(statement) > STATEMENT_CHARS:
        statement = statement[:STATEMENT_CHARS] + "\n[... cut ...]"
    user = f"Task id: {instance.instance_id}\n\n{statement}\n\nThe repository is your current directory."
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


Replier = Callable[[Sequence[list[dict[str, str]]], int], list[str]]
"""What acts in an episode: the next assistant reply for each conversation, at most `n` tokens each."""


def greedy_replier(model: Any, tok: Any) -> Replier:
    """The policy under evaluation: greedy decoding, all active episodes in one batch."""
    from meta_agent.inference import greedy_chat

    def reply(convs: Sequence[list[dict[str, str]]], max_new: int) -> list[str]:
        return greedy_chat(model, tok, convs, max_new_tokens=max_new, batch_size=max(1, len(convs)))

    return reply


def _command(reply: str) -> str | None:
    m = FENCE.search(reply)
    return (m.group(1).strip() or None) if m else None


def _turn(e: EvalEpisode, reply: str, last: bool, s: ScaffoldSettings) -> None:
    e.turns += 1
    e.messages.append({"role": "assistant", "content": reply})
    e.transcript.append(f"[assistant]\n{reply}")
    command = _command(reply)
    if command == "submit":
        e.end_reason = "submit"
        return
    if command is None:
        obs = "No command found. Reply with exactly one shell command in a ```bash block, or submit."
    else:
        res = e.session.run(["bash", "-c", command], timeout=s.command_timeout_s)
        out = (res.stdout + res.stderr)[: s.observation_chars]
        obs = f"exit code {res.exit_code}{' (timed out)' if res.timed_out else ''}\n{out}"
    e.transcript.append(f"[observation]\n{obs}")
    e.messages.append({"role": "user", "content": obs})
    if last:
        e.end_reason = "turn_cap"


def run_episodes(
    reply: Replier,
    instances: list[SweInstance],
    sandbox: Sandbox,
    settings: ScaffoldSettings,
    on_done: Callable[[int], None] | None = None,
    batch_size: int = 8,
) -> list[tuple[str, str, str, int]]:
    """(diff, transcript, end reason, turns) per instance, in order."""
    results: list[tuple[str, str, str, int]] = []
    limits = Limits(memory_mb=4096, cpus=1.0, pids=256, timeout_s=settings.command_timeout_s)
    for start in range(0, len(instances), batch_size):
        chunk = instances[start : start + batch_size]
        with tempfile.TemporaryDirectory(prefix="swe-eval-") as tmp:
            episodes: list[EvalEpisode] = []
            try:
                for i, inst in enumerate(chunk):
                    work = Path(tmp) / f"e{i}"
                    session = open_instance_session(inst, work, sandbox, limits)
                    episodes.append(EvalEpisode(inst, work, session, first_messages(inst)))
                for turn in range(settings.max_turns):
                    active = [e for e in episodes if not e.end_reason]
                    if not active:
                        break
                    replies = reply([e.messages for e in active], settings.turn_tokens)
                    for e, text in zip(active, replies, strict=True):
                        _turn(e, text, turn + 1 == settings.max_turns, settings)
                for e in episodes:
                    results.append((e.diff(), "\n".join(e.transcript), e.end_reason, e.turns))
            finally:
                for e in episodes:
                    e.session.close()
        if on_done:
            on_done(len(chunk))
    return results
