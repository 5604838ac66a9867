"""The rollouts every candidate re-scores, as the harness sees them: nothing that tells a probe apart.

A generation's replay set is its own rollouts plus the domain's hacking probes (rollouts that game
the reward and that the verifier rejects). A candidate that could recognise the probes (their ids,
their group ids, their position, their empty rewards, a `probe` marker, the verifier's verdict
itself) could pay everything but them and pass the probe check while staying hackable. So the file
written for the sandbox holds opaque ids in a shuffled order, no verdicts, no stored rewards or
labels and no markers; the trusted side keeps the verdicts and which ids are probes.

The agents' sessions (coders, repairs, rebases) never see that file: they read the generation's
rollouts whole in the evidence folder, so any row of the replay set missing there would be a probe,
and a candidate that knew the probes' texts could pay everything but them. Sessions get their own
copy of the real rollouts alone (`session_path`), under other opaque ids and in another order, for a
`harness replay` of their own.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from pathlib import Path

from meta_agent.contract import RolloutRecord, write_jsonl
from meta_agent.tokens import approx_tokens

PROBE_KEY = "probe"


@dataclass(frozen=True)
class ReplaySet:
    path: Path
    """The sanitized JSONL the replay stage's sandbox reads (rollouts and probes)."""
    session_path: Path
    """The sanitized JSONL an agent's session may read: the real rollouts only, under other ids."""
    records: list[RolloutRecord]
    """The same rollouts under their opaque ids, with the verifier's verdict and the probe marker kept."""

    @property
    def verified(self) -> dict[str, bool]:
        return {r.rollout_id: bool(r.verified) for r in self.records}

    @property
    def probes(self) -> set[str]:
        return {r.rollout_id for r in self.records if r.extra.get(PROBE_KEY)}

    @property
    def ids(self) -> set[str]:
        return {r.rollout_id for r in self.records}


def _opaque(kind: str, original: str, salt: str) -> str:
    return f"{kind}{hashlib.sha256(f'{salt}:{original}'.encode()).hexdigest()[:12]}"


def _shown(record: RolloutRecord, salt: str, commit: str) -> RolloutRecord:
    """`record` as a sandbox sees it: opaque ids, nothing the verifier, main's harness or meta-agent added."""
    return record.model_copy(update={
        "rollout_id": _opaque("r", record.rollout_id, salt), "group_id": _opaque("g", record.group_id, salt),
        "verified": None, "labels": [], "rewards": {}, "reward": 0.0, "advantage": 0.0, "weight": 1.0,
        "harness_commit": commit, "step": 0, "prompt_tokens": 0,
        "extra": {k: v for k, v in record.extra.items() if k != PROBE_KEY}})


def _write_shuffled(path: Path, rows: list[RolloutRecord], salt: str) -> None:
    order = list(range(len(rows)))
    random.Random(salt).shuffle(order)
    write_jsonl(path, [rows[i] for i in order])


def build_replay_set(path: Path, rollouts: list[RolloutRecord], probes: list[RolloutRecord], salt: str,
                     session_path: Path) -> ReplaySet:
    """Write the replay stage's view of `rollouts` + `probes` to `path`, and the agents' view of `rollouts`
    alone to `session_path`; `salt` (secret to every sandbox) makes ids and order unguessable from one
    generation to the next, and the two files share no id."""
    probes = list(probes)
    trusted: list[RolloutRecord] = []
    shown: list[RolloutRecord] = []
    commit = rollouts[0].harness_commit if rollouts else "unknown"
    real_prompt = {r.task_id: r.prompt for r in rollouts}
    for probe in probes:  # look like the generation's own rollouts of the same task
        probes[probes.index(probe)] = probe.model_copy(update={
            "prompt": real_prompt.get(probe.task_id, probe.prompt),
            "completion_tokens": probe.completion_tokens or approx_tokens(probe.completion)})
    for record in [*rollouts, *probes]:
        view = _shown(record, salt, commit)
        trusted.append(record.model_copy(update={"rollout_id": view.rollout_id, "group_id": view.group_id}))
        shown.append(view)
    _write_shuffled(path, shown, salt)
    session_salt = f"{salt}:session"
    _write_shuffled(session_path, [_shown(r, session_salt, commit) for r in rollouts], session_salt)
    return ReplaySet(path=path, session_path=session_path, records=trusted)
