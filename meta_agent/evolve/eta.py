"""How long the running generation and the whole run have to go, from the pace this process has kept.

The unit is the GRPO step, the run's dominant cost: the plan (`estimate.plan_of`) says how many steps a
generation and the run train at most, and the pace is wall seconds per step measured since this process
started (evaluations, replays and merges between the steps are inside that pace). Steps a resumed run
finds done count toward where it is, never toward its pace. A generation is known from the reporter's
phase lines, which all start `gen N:`; a generation that trains more than planned (repairs, a candidate's
second try) shows no generation eta rather than a negative one.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

GENERATION_PHASE = re.compile(r"gen (\d+):")


@dataclass
class Etas:
    total: int
    """GRPO steps the whole run trains at most."""
    per_generation: int
    """GRPO steps one generation trains at most (main, noise reruns, candidates, confirmation)."""
    clock: Callable[[], float] = time.monotonic
    done: int = 0
    generation: int | None = None
    started: float = field(init=False)
    base: int = field(init=False, default=0)
    generation_start: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.started = self.clock()

    def resumed_at(self, done: int) -> None:
        """Steps earlier processes of this run trained: where the run is, not how fast this one goes."""
        self.base = self.done = done
        self.started = self.clock()

    def phase(self, text: str) -> None:
        match = GENERATION_PHASE.match(text)
        if match and int(match.group(1)) != self.generation:
            self.generation = int(match.group(1))
            self.generation_start = self.done

    def advance(self, steps: int = 1) -> None:
        self.done += steps

    def seconds_per_step(self) -> float | None:
        steps = self.done - self.base
        return (self.clock() - self.started) / steps if steps > 0 else None

    def run_left(self) -> float | None:
        pace = self.seconds_per_step()
        return None if pace is None else max(0, self.total - self.done) * pace

    def generation_left(self) -> float | None:
        pace = self.seconds_per_step()
        if pace is None or self.generation is None:
            return None
        left = self.generation_start + self.per_generation - self.done
        return left * pace if left >= 0 else None

    def text(self) -> str:
        """` · gen 1 eta 4 min 10 s · run eta 21 min 05 s`, or what of it is known yet."""
        gen, run = self.generation_left(), self.run_left()
        parts = ([] if gen is None else [f"gen {self.generation} eta {duration(gen)}"]) + \
            ([] if run is None else [f"run eta {duration(run)}"])
        return "".join(f" · {p}" for p in parts)


def duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min" if seconds >= 3600 else \
        f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"
