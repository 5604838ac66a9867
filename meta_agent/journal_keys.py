"""The names of a run's parts, in one place: journal keys, candidate ids, branches and folders.

Every journal line that marks a step done carries a key; `resume` finds finished steps by it, so these
strings are a file format — change one and old runs no longer resume. The grammar:

    g{G}/{step}                  a generation's step: start, main-train, control-eval, noise, noise-{i},
                                 main-replay, parents, propose, done, confirm/control-train, ...
    g{G}/c{K}{tag}/{step}        a candidate's step: created, static, replay, train, verdict, final,
                                 confirmed, evidence, learn, ... (`tag` is "" or "+combined")
    g{G}/merge/c{K}              its merge onto main
    final/{step}                 after the last generation: static-g{G}, {arm}-test, compare
    run/start, run/done          the run's first and last step
    {key}/time                   the date of the commit made under key (so a redo makes the same commit)

A repair turn n re-runs a stage as `{stage}@{n}`; `g{G}/parents/{K}` is the archive merge candidate K
builds on. `GRAMMAR` matches every key (a test holds a real run's journal to it).

A candidate id is `{run id}/{G}-{K}` (its combination's stages are filed under the id + "+combined"); its
branch is `cand/{candidate id}`, and its folder `RUN/gen-{GGG}/cand-{K}{tag}`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

COMBINED = "+combined"
"""The tag of a candidate re-tested on top of the winners merged before it."""

RUN_START = "run/start"
RUN_DONE = "run/done"
_STEP = r"[a-z]+(?:-[a-z0-9]+)*(?:@\d+)?"
GRAMMAR = re.compile(
    rf"^(?:run/(?:start|done)"
    rf"|g\d+/(?:c\d+(?:\+combined)?/{_STEP}|merge/c\d+|merge/{_STEP}|confirm/{_STEP}|parents/\d+|{_STEP})"
    rf"|final/{_STEP})(?:/time)?$")

_ID = re.compile(r"^(?P<run>.+)/(?P<g>\d+)-(?P<k>\d+)(?P<tag>\+combined)?$")
_WORKSPACE = re.compile(r"gen-(\d+)/cand-(\d+)")


@dataclass(frozen=True, order=True)
class CandidateId:
    """Which run, generation and slot a candidate is."""

    run_id: str
    g: int
    k: int

    def __str__(self) -> str:
        return f"{self.run_id}/{self.g}-{self.k}"

    @classmethod
    def parse(cls, text: str) -> CandidateId:
        """From `run/G-K` (a stage id's `+combined` tag is accepted and dropped); ValueError otherwise."""
        m = _ID.match(text)
        if m is None:
            raise ValueError(f"not a candidate id (run/G-K): {text!r}")
        return cls(m["run"], int(m["g"]), int(m["k"]))

    @property
    def branch(self) -> str:
        return f"cand/{self}"

    def key(self, *parts: object, tag: str = "") -> str:
        """This candidate's journal key for a step (see the module docstring)."""
        return cand_key(self.g, self.k, *parts, tag=tag)


def gen_key(g: int, *parts: object) -> str:
    """`g{G}/...`: a step of generation g."""
    return "/".join([f"g{g}", *map(str, parts)])


def cand_key(g: int, k: int, *parts: object, tag: str = "") -> str:
    """`g{G}/c{K}{tag}/...`: a step of candidate k of generation g (or of its combination)."""
    return gen_key(g, f"c{k}{tag}", *parts)


def merge_key(g: int, k: int) -> str:
    return gen_key(g, "merge", f"c{k}")


def final_key(*parts: object) -> str:
    """`final/...`: a step after the last generation."""
    return "/".join(["final", *map(str, parts)])


def time_key(key: str) -> str:
    """Where the date of the commit made under `key` is journaled."""
    return f"{key}/time"


def generation_of(key: str) -> int | None:
    """The generation a key belongs to, or None (a `final/` or setup key)."""
    head = key.split("/", 1)[0]
    return int(head[1:]) if head[:1] == "g" and head[1:].isdigit() else None


def gen_dir(g: int) -> str:
    """A generation's folder under the run dir."""
    return f"gen-{g:03d}"


def cand_dir(k: int, tag: str = "") -> str:
    """A candidate's folder under its generation's."""
    return f"cand-{k}{tag}"


def slot_of_workspace(path: str) -> tuple[int, int] | None:
    """(generation, candidate) of a workspace laid out as the loop lays it out (…/gen-NNN/cand-K…), else None."""
    m = _WORKSPACE.search(path)
    return (int(m.group(1)), int(m.group(2))) if m else None
