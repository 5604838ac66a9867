"""What a run will cost before it runs: its plan in units (training runs, GRPO steps, evaluation batches,
LLM sessions) and a wall time from rates measured on this machine.

The rates come from a short calibration the first time a (policy, domain, sandbox) is used: one real
2-step training of the shipped template in the sandbox and one real evaluation batch, timed. They are
cached in the user data dir. Each finished run then records how far its real working time was from its
estimate, and later estimates are scaled by the median of those ratios: the model counts only the big
costs (start-ups, steps, batches), and what it leaves out is learned from earlier runs, not guessed.
"""

from __future__ import annotations

import hashlib
import math
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from meta_agent.config import EvolveConfig
from meta_agent.fsutil import atomic_write_text
from meta_agent.harness_runner import StepSeen
from meta_agent.paths import data_dir

PER_CANDIDATE_S = 5.0
"""Implementing, static checks and the replay of one candidate (skills proposer), not calibrated."""


class Rates(BaseModel):
    key: str
    train_start_s: float = Field(ge=0, description="a training command's fixed cost: sandbox, imports, model load")
    step_s: float = Field(ge=0, description="one GRPO step at the domain's settings")
    eval_batch_s: float = Field(ge=0, description="one evaluation batch, the model's load included")
    eval_batch: int = Field(ge=1)
    measured: str
    corrections: list[float] = Field(default_factory=list, description="real / estimated working time of "
                                                                       "finished runs, newest last")

    def correction(self) -> float:
        return statistics.median(self.corrections[-5:]) if self.corrections else 1.0


class Plan(BaseModel):
    generations: int
    candidates: int
    steps: int
    training_runs: int
    grpo_steps: int
    evaluations: int
    eval_batches: int
    llm_sessions: int


def plan_of(cfg: EvolveConfig, eval_batch: int) -> Plan:
    """The most a run does: every candidate reaches its training backtest (failures end sooner), and every
    confirmation rung runs, as far as `search_steps` pays for them (evolve/search_budget.py)."""
    g, k = cfg.generations, cfg.candidates
    noise, backtests = g * cfg.noise_reruns, g * k
    confirm = g * (1 + cfg.confirm_top) if cfg.confirm_steps else 0
    if cfg.search_steps is not None:
        left = max(0, cfg.search_steps - noise * cfg.steps)
        backtests = min(backtests, left // cfg.steps)
        confirm = min(confirm, (left - backtests * cfg.steps) // cfg.confirm_steps) if confirm else 0
    trained = g + backtests + noise  # each evaluated on the selection split
    runs = trained + (max(0, g - 1) if cfg.control == "static" else 0)
    selection = cfg.selection_limit or 0
    test = cfg.test_limit or selection
    batches = (trained + confirm) * math.ceil(selection / eval_batch)
    finals = 2 if cfg.control == "static" else 1
    batches += finals * math.ceil(test / eval_batch)
    sessions = g * (1 + k * (1 + cfg.repair_turns)) if cfg.proposer == "llm" else 0
    return Plan(generations=g, candidates=k, steps=cfg.steps, training_runs=runs + confirm,
                grpo_steps=runs * cfg.steps + confirm * cfg.confirm_steps, evaluations=trained + confirm + finals,
                eval_batches=batches, llm_sessions=sessions)


def estimate_seconds(plan: Plan, rates: Rates) -> float:
    raw = (plan.training_runs * rates.train_start_s + plan.grpo_steps * rates.step_s
           + plan.eval_batches * rates.eval_batch_s + plan.generations * plan.candidates * PER_CANDIDATE_S)
    return raw * rates.correction()


def eval_batch_of(cfg: EvolveConfig) -> int:
    """Tasks the domain's sealed evaluation answers per batch (1 where it has no batches)."""
    return max(1, int(getattr(cfg.domain_settings(), "eval_batch_size", 1) or 1))


def rates_key(cfg: EvolveConfig, policy: Path) -> str:
    """Rates hold for one policy, domain (with its settings), sandbox backend and step count."""
    text = "|".join([str(policy), cfg.domain, cfg.domain_settings().model_dump_json(), cfg.sandbox.backend,
                     str(cfg.steps)])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def rates_file(key: str) -> Path:
    return data_dir() / "calibration" / f"{key}.json"


def cached_rates(key: str) -> Rates | None:
    try:
        return Rates.model_validate_json(rates_file(key).read_bytes())
    except (OSError, ValidationError):
        return None


def save_rates(rates: Rates) -> None:
    path = rates_file(rates.key)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, rates.model_dump_json(indent=2))


def calibrate(cfg: EvolveConfig, policy: Path, say: Callable[[str], None]) -> Rates:
    """Time one 2-step training of the shipped template (in the run's sandbox) and one evaluation batch."""
    from meta_agent.domains import domain_entry, domain_for
    from meta_agent.gitops import run_harness
    from meta_agent.sealed import sealed_backend
    from meta_agent.training import train_commit, write_train_tasks

    domain = domain_for(cfg)
    batch = eval_batch_of(cfg)
    seen: list[StepSeen] = []
    with tempfile.TemporaryDirectory(prefix="meta-agent-calibration-") as tmp:
        work = Path(tmp)
        repo = run_harness(work, None, domain_entry(cfg.domain).harness_domain)
        say("calibrating: a 2-step training of the template harness, timed (once per policy, domain, sandbox)")
        started = time.monotonic()
        trained = train_commit(
            repo=repo, commit=repo.head.commit.hexsha, domain=domain, sandbox=sealed_backend(cfg.sandbox.backend),
            limits=cfg.sandbox.limits(), policy=policy, root_policy=policy, steps=2, seed=0,
            work_dir=work / "work", out_dir=work / "train", tasks_file=write_train_tasks(domain, work / "inputs"),
            train_timeout=cfg.sandbox.train_timeout_s, on_step=seen.append)
        total = time.monotonic() - started
        say("calibrating: one evaluation batch, timed")
        started = time.monotonic()
        domain.evaluate(trained.checkpoint, "selection", limit=batch, root=policy)
        batch_s = time.monotonic() - started
    step_s = _step_seconds(seen, trained.output.metrics[-1].wall_time if trained.output.metrics else None, total)
    return Rates(key=rates_key(cfg, policy), train_start_s=max(0.0, total - 2 * step_s), step_s=step_s,
                 eval_batch_s=batch_s, eval_batch=batch, measured=time.strftime("%Y-%m-%d %H:%M:%S"))


def _step_seconds(seen: Sequence[StepSeen], last_wall: float | None, total: float) -> float:
    """One step's time: the template's own wall_time of its last step (the first one also warms up), else
    the gap between the two steps' metric lines as the watcher saw them, else a third of the whole."""
    if last_wall is not None and 0 < last_wall < total:
        return float(last_wall)
    times = [s.seconds for s in seen if s.new == 1]
    if len(times) == 2 and times[1] > times[0]:
        return times[1] - times[0]
    return total / 3


def record_outcome(key: str, estimated_s: float, real_s: float) -> None:
    """A finished run's real working time against its estimate, for later estimates to learn from."""
    rates = cached_rates(key)
    if rates is None or estimated_s <= 0 or real_s <= 0:
        return
    raw = estimated_s / rates.correction()
    save_rates(rates.model_copy(update={"corrections": [*rates.corrections, real_s / raw][-20:]}))
