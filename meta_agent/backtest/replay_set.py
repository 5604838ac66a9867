"""The rollouts every candidate re-scores, as the harness sees them: nothing that tells a probe apart.

A generation's replay set is its own rollouts plus the domain's hacking probes (rollouts that game
the reward and that the verifier rejects). A candidate that could recognise the probes (their ids,
their group ids, their position, their empty rewards, a `probe` marker, the verifier's verdict
itself) could pay everything but them and pass the probe check while staying hackable. So the file
written for the sandbox holds opaque ids in a shuffled order, no verdicts, no stored rewards or
labels and no markers; the trusted side keeps the verdicts and which ids are probes.
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
    """The sanitized JSONL the sandbox reads."""
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


def build_replay_set(path: Path, rollouts: list[RolloutRecord], probes: list[RolloutRecord], salt: str
                     ) -> ReplaySet:
    """Write the sandbox's view of `rollouts` + `probes` to `path`; `salt` (secret to the sandbox) makes ids
    and order unguessable from one generation to the next."""
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
        rid = _opaque("r", record.rollout_id, salt)
        gid = _opaque("g", record.group_id, salt)
        trusted.append(record.model_copy(update={"rollout_id": rid, "group_id": gid}))
        shown.append(record.model_copy(update={
            "rollout_id": rid, "group_id": gid, "verified": None, "labels": [], "rewards": {}, "reward": 0.0,
            "advantage": 0.0, "weight": 1.0, "harness_commit": commit, "step": 0, "prompt_tokens": 0,
            "extra": {k: v for k, v in record.extra.items() if k != PROBE_KEY}}))
    order = list(range(len(shown)))
    random.Random(salt).shuffle(order)
    write_jsonl(path, [shown[i] for i in order])
    return ReplaySet(path=path, records=trusted)
