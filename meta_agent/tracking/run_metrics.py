"""The numbers meta-agent sends to a tracker, read from a run's journal and validated files only.

Per generation: main's selection score with its CI, the noise floor, what happened to the candidates
(promoted, rejected, merged, best delta), where the time went and what the LLM agents cost. Per
training run: its optimizer steps from `metrics.jsonl`, read through the contract (a harness-written
file that does not validate is left out, never trusted). At the end: evolved vs static on the test split.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from meta_agent.contract import ContractError, MetricsRecord, read_jsonl
from meta_agent.eventlog import EventLog
from meta_agent.journal import GenerationDone
from meta_agent.llm.accounting import USAGE_FILE, LedgerState
from meta_agent.report.lineage_view import GenerationNode, LineageView, collect_lineage
from meta_agent.runinfo import read_run_info

GENERATIONS_RUN = "meta-agent"
"""The tracker run that holds per-generation metrics; each training run is a run named by its path."""
TRAINING_GLOBS = ("gen-*/main", "gen-*/noise-*", "gen-*/cand-*/train", "static/g*")
STEP_FIELDS = ("reward_mean", "reward_std", "kl", "entropy", "completion_length_mean", "truncation_rate",
               "zero_variance_frac", "clip_ratio", "kept_frac", "loss", "learning_rate")


class TrainingSeries(BaseModel):
    name: str
    """Its place in the run dir, e.g. gen-001/cand-0/train."""
    steps: list[dict[str, float]]
    """Per optimizer step (index = step): the fields of MetricsRecord that the run reported."""


class RunMetrics(BaseModel):
    run_id: str
    params: dict[str, str]
    generations: dict[int, dict[str, float]]
    final: dict[str, float]
    training: list[TrainingSeries]

    def runs(self) -> list[tuple[str, list[tuple[int, dict[str, float]]], dict[str, str]]]:
        """What every backend writes, as (run name, [(step, metrics)], params): meta-agent's generations
        (the final comparison one step after the last), then each training run by its optimizer steps."""
        rows = sorted(self.generations.items())
        if self.final:
            rows.append((len(rows), self.final))
        return [(GENERATIONS_RUN, rows, self.params),
                *((s.name, list(enumerate(s.steps)), {}) for s in self.training)]


def _generation(node: GenerationNode, done: GenerationDone | None, usage: LedgerState | None) -> dict[str, float]:
    main = {"main/selection_score": node.score, "main/ci_low": node.low, "main/ci_high": node.high,
            "main/noise_floor": node.noise_floor}
    out: dict[str, float] = {k: v for k, v in main.items() if v is not None}
    cands = node.candidates
    out["candidates/proposed"] = len(cands)
    for verdict in ("promoted", "rejected", "conflict", "not implemented"):
        out[f"candidates/{verdict.replace(' ', '_')}"] = sum(c.verdict == verdict for c in cands)
    out["candidates/merged"] = sum(c.merged for c in cands)
    deltas = [c.delta for c in cands if c.delta is not None]
    if deltas:
        out["candidates/best_delta"] = max(deltas)
    for c in cands:
        if c.delta is not None:
            out[f"delta/cand-{c.k}"] = c.delta
    if done is not None:
        out.update({f"time/{k}_s": v for k, v in done.time.items()})
    scope = usage.by_scope.get(f"g{node.gen}") if usage else None
    if scope is not None:
        out.update({"llm/calls": scope.calls, "llm/tokens": scope.tokens, "llm/dollars": scope.dollars,
                    "llm/cached_calls": scope.cached_calls})
    return {k: float(v) for k, v in out.items()}


def _final(view: LineageView) -> dict[str, float]:
    out = {}
    for arm in ("evolved", "static", "paired"):
        interval = view.final.get(arm)
        if isinstance(interval, dict) and isinstance(interval.get("mean"), int | float):
            out[f"final/{arm}_test" if arm != "paired" else "final/evolved_minus_static"] = float(interval["mean"])
    return out


def training_series(run_dir: Path) -> list[TrainingSeries]:
    series = []
    for pattern in TRAINING_GLOBS:
        for out in sorted(run_dir.glob(pattern)):
            try:
                records = read_jsonl(out / "metrics.jsonl", MetricsRecord)
            except ContractError:
                continue  # unfinished or invalid: nothing of it is reported
            steps = [{f: float(v) for f in STEP_FIELDS if (v := getattr(r, f)) is not None} for r in records]
            series.append(TrainingSeries(name=out.relative_to(run_dir).as_posix(), steps=steps))
    return series


def _params(run_dir: Path) -> dict[str, str]:
    settings = read_run_info(run_dir).settings
    keys = ("domain", "policy", "generations", "candidates", "train_steps", "proposer", "seed", "control",
            "selection_limit", "test_limit")
    return {k: str(settings[k]) for k in keys if k in settings}


def run_metrics(run_dir: Path) -> RunMetrics:
    view = collect_lineage(run_dir, run_dir)
    log = EventLog(run_dir, repair=False)
    done = {d.gen: d for d in log.of_type(GenerationDone)}
    usage_file = run_dir / USAGE_FILE
    usage = LedgerState.model_validate_json(usage_file.read_text()) if usage_file.is_file() else None
    return RunMetrics(
        run_id=view.run_id, params=_params(run_dir),
        generations={g.gen: _generation(g, done.get(g.gen), usage) for g in view.generations},
        final=_final(view), training=training_series(run_dir))
