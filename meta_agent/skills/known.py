"""Experiments the skills library already measured and rejected under identical conditions.

A backtest is a function of what it runs: main's tree, the policy it starts from, the run's settings, the
tasks, and the skill's code and parameters. Training seeds are fixed and the sealed evaluation is greedy, so
running the same experiment again gives the same verdict at the same cost. The second `make demo` did
exactly that: it re-proposed the warm-start recipe the first run had trained for 14 minutes and rejected at
a delta of 0, and rejected it again.

So each piece of evidence records the `conditions` it was measured under (evolve/conditions.py) and the
`skill_digest` of the skill it applied, and the offline proposer counts a variant the library holds a
measured rejection of (the gate's or the confirmation rung's verdict, never a failure on the way, which a
crash or a timeout can cause) under the same conditions and the same skill code as tried in this run: it
goes on to the skills and variants not yet measured. Wins are not remembered this way: a skill that won
under these conditions is proposed and backtested again, since main changes only by merging a backtested
winner of its own run. `evolve --rerun-known` turns this off.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from meta_agent.skills.model import SKILL_FILE, Evidence, SkillMeta
from meta_agent.skills.plain_folder import read_folder
from meta_agent.skills.skill_files import SIDECAR_FILE, SkillError
from meta_agent.skills.store import Skill, SkillSet
from meta_agent.skills.variants import Tried

MEASURED = ("gate", "confirm")
"""The stages whose rejection is a measurement of the change (the others stop it before it is measured)."""


def skill_digest(skill: Skill) -> str:
    """The skill as it would run: its settings and text (not its evidence or status, which change with every
    run) and every other file of its folder. '' when the folder cannot be read as plain data."""
    meta = skill.meta.model_dump(mode="json", exclude={"evidence", "status", "retired_in"})
    h = hashlib.sha256(json.dumps({"meta": meta, "body": skill.body}, sort_keys=True).encode())
    try:
        files = read_folder(skill.path)
    except (SkillError, OSError):
        return ""
    for rel, data in sorted(files.items()):
        if rel.as_posix() in (SKILL_FILE, SIDECAR_FILE):
            continue
        h.update(f"\0{rel.as_posix()}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


@dataclass(frozen=True)
class KnownRejection:
    """A variant of `skill` an earlier run measured and rejected under this generation's conditions."""

    skill: str
    evidence: Evidence

    def describe(self) -> str:
        e = self.evidence
        params = ", ".join(f"{n}={v}" for n, v in sorted(e.params.items()))
        delta = f"delta {e.delta:+.3f}" if e.delta is not None else "no delta"
        return (f"skill {self.skill}{f' ({params})' if params else ''} was measured and rejected under these "
                f"exact conditions by run {e.run} ({delta}, at the {e.stage})")


def known_rejections(skills: SkillSet, domain: str, conditions: str, run_id: str) -> list[KnownRejection]:
    """Earlier runs' measured rejections, under `conditions`, of the library's skills as they are now."""
    if not conditions:
        return []
    out = []
    for skill in skills.all():
        matching = [e for e in skill.meta.evidence
                    if e.conditions == conditions and e.domain == domain and e.run != run_id
                    and e.verdict == "rejected" and e.stage in MEASURED and e.skill_digest]
        if not matching:
            continue
        digest = skill_digest(skill)
        out += [KnownRejection(skill.name, e) for e in matching if e.skill_digest == digest]
    return out


def known_tried(known: list[KnownRejection], meta: SkillMeta) -> list[Tried]:
    """The skill's known rejections as variants it has tried (skills/variants.py; no parameters recorded:
    its defaults, as `tried_in` reads a verdict)."""
    return [Tried(params=dict(k.evidence.params) or dict(meta.params), verdict="rejected", delta=k.evidence.delta)
            for k in known if k.skill == meta.name]
