"""The benchmark's numbers, computed only from the saved per-task results (`seed-N/results/<arm>.json`).

Per seed: each arm's test accuracy and the paired difference evolved - other arm, with a 95% CI from
resampling test tasks (the same tasks in every arm, so per-task difficulty cancels) and the exact
McNemar test on the tasks the two arms disagree on. Across seeds: the mean and the interquartile mean
of each difference with stratified bootstrap CIs over seeds (rliable), and the hierarchical bootstrap
(seeds, then tasks within each seed), whose interval also carries each seed's task noise.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from bench.efficacy_lib.arms import ARMS, SeedRun
from bench.efficacy_lib.splits import fingerprint
from meta_agent.domains.base import EvalResult
from meta_agent.stats import (
    Interval,
    McNemar,
    hierarchical_bootstrap_ci,
    iqm,
    mcnemar_exact,
    paired_bootstrap_ci,
    stratified_bootstrap_ci,
)

COMPARISONS = ("static", "reference", "static_total")
"""evolved - each of these."""


class SeedReport(BaseModel):
    seed: int
    accuracy: dict[str, float]
    n_tasks: int
    delta: dict[str, Interval]
    """evolved - arm, paired over test tasks."""
    mcnemar: dict[str, McNemar] = Field(default_factory=dict)
    """evolved vs arm: exact McNemar over the same tasks (empty in reports written before it was recorded)."""
    differences: dict[str, list[float]] = Field(default_factory=dict)
    """evolved - arm per test task, in task-id order: what the hierarchical bootstrap resamples."""
    run: SeedRun
    splits: str | None = None
    """The fingerprint of the seed's sealed secret (efficacy/splits.py): rows that share it were scored on the
    same test tasks. None in reports written before it was recorded."""


class Summary(BaseModel):
    mean: Interval
    iqm: Interval
    seeds_above_zero: int
    """Seeds whose per-seed CI lies entirely above 0."""
    seeds: int
    hierarchical: Interval | None = None
    """Mean over seeds with the hierarchical bootstrap CI (seeds, then tasks); None for older reports."""


class EfficacyReport(BaseModel):
    domain: str
    preset: str
    seeds: list[SeedReport]
    summary: dict[str, Summary]
    search: dict[str, Any] = Field(default_factory=dict)
    """The evolve arm's search settings (confirm_steps, archive_parents, ...) this report measured."""


def load_results(seed_dir: Path) -> dict[str, EvalResult]:
    return {arm: EvalResult.model_validate_json((seed_dir / "results" / f"{arm}.json").read_text())
            for arm in ARMS}


def seed_report(seed_dir: Path, run: SeedRun) -> SeedReport:
    results = load_results(seed_dir)
    per_task = {arm: r.per_task() for arm, r in results.items()}
    ids = sorted(set.intersection(*(set(p) for p in per_task.values())))
    if not ids or any(len(p) != len(ids) for p in per_task.values()):
        raise ValueError(f"{seed_dir}: the arms were not scored on the same test tasks")
    accuracy = {arm: sum(p[i] for i in ids) / len(ids) for arm, p in per_task.items()}
    evolved = [per_task["evolved"][i] for i in ids]
    arms = {other: [per_task[other][i] for i in ids] for other in COMPARISONS}
    delta = {other: paired_bootstrap_ci(evolved, scores) for other, scores in arms.items()}
    return SeedReport(seed=run.seed, accuracy=accuracy, n_tasks=len(ids), delta=delta, run=run,
                      splits=fingerprint(seed_dir),
                      mcnemar={other: mcnemar_exact(evolved, scores) for other, scores in arms.items()},
                      differences={other: [e - c for e, c in zip(evolved, scores, strict=True)]
                                   for other, scores in arms.items()})


def build(domain: str, preset: str, seeds: list[SeedReport], search: dict[str, Any] | None = None
          ) -> EfficacyReport:
    summary = {}
    for other in COMPARISONS:
        values = [s.delta[other].mean for s in seeds]
        nested = [s.differences[other] for s in seeds if s.differences.get(other)]
        summary[other] = Summary(mean=stratified_bootstrap_ci({domain: values}, "mean"),
                                 iqm=stratified_bootstrap_ci({domain: values}, "iqm"),
                                 seeds_above_zero=sum(1 for s in seeds if s.delta[other].low > 0), seeds=len(seeds),
                                 hierarchical=hierarchical_bootstrap_ci(nested) if len(nested) == len(seeds)
                                 else None)
    return EfficacyReport(domain=domain, preset=preset, seeds=seeds, summary=summary, search=search or {})


def render(report: EfficacyReport) -> str:
    lines = [f"# Efficacy: {report.domain}, preset {report.preset}, {len(report.seeds)} seed(s)", "",
             "Test accuracy per arm, and evolved - arm (paired over test tasks, 95% CI).", "",
             "| seed | evolved | static | reference | static, total compute | evolved - static | "
             "evolved - reference | evolved - static total | policy steps (evolved/static/reference/total) | "
             "search steps | wall min (evolve/reference/total) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in report.seeds:
        a, c, w = s.accuracy, s.run.compute, s.run.wall_s
        steps = "/".join(str(c[arm].steps) for arm in ARMS)
        walls = "/".join(f"{w.get(k, 0) / 60:.1f}" for k in ("evolve", "reference", "static_total"))
        lines.append(f"| {s.seed} | {a['evolved']:.3f} | {a['static']:.3f} | {a['reference']:.3f} | "
                     f"{a['static_total']:.3f} | {s.delta['static']} | {s.delta['reference']} | "
                     f"{s.delta['static_total']} | {steps} | {s.run.search.steps} | {walls} |")
    lines += ["", "Where each seed's evolve generations spent their time (the rest of the evolve arm's wall time is "
              "the static arm and the final test evaluations):", ""]
    for s in report.seeds:
        t = s.run.evolve_time
        if t:
            rest = t["wall"] - t["train"] - t["eval"] - t["proposer"]
            lines.append(f"- seed {s.seed}: {t['wall'] / 60:.1f} min: training {t['train'] / 60:.1f}, evaluation "
                         f"{t['eval'] / 60:.1f}, proposer {t['proposer'] / 60:.1f}, other {rest / 60:.1f}")
    if any(s.mcnemar for s in report.seeds):
        lines += ["", "Exact McNemar per seed (tasks evolved wins-loses against the arm, two-sided p):", "",
                  "| seed | " + " | ".join(f"vs {o}" for o in COMPARISONS) + " |", "|---|---|---|---|"]
        for s in report.seeds:
            lines.append(f"| {s.seed} | " + " | ".join(str(s.mcnemar.get(o, "-")) for o in COMPARISONS) + " |")
    lines += ["", "Across seeds (95% CIs: stratified bootstrap over seed means, as rliable; hierarchical bootstrap "
              "over seeds and then tasks, which also carries each seed's task noise):", "",
              "| evolved - | mean | IQM | hierarchical | seeds with CI above 0 |", "|---|---|---|---|---|"]
    for other, m in report.summary.items():
        lines.append(f"| {other} | {m.mean} | {m.iqm} | {m.hierarchical or '-'} | {m.seeds_above_zero}/{m.seeds} |")
    lines += ["", "Not in these intervals: training noise (two trainings of one harness can differ by a few "
              "tasks; docs/evolve.md, Repeatability)."]
    return "\n".join(lines) + "\n"


def compare(rows: list[tuple[str, EfficacyReport]]) -> str:
    """One line per (search setting, seed): the ablation table of the search's parts, from saved reports.
    Rows of one seed are paired only if they share its splits; a footnote says when they do not."""
    lines = ["| search | seed | splits | evolved | static | reference | evolved - static | evolved - reference | "
             "merged | search steps |", "|---|---|---|---|---|---|---|---|---|---|"]
    splits: dict[int, list[str | None]] = {}
    for label, report in rows:
        for s in report.seeds:
            a = s.accuracy
            merged = "; ".join(s.run.merged) or "nothing"
            splits.setdefault(s.seed, []).append(s.splits)
            lines.append(f"| {label} | {s.seed} | {s.splits or '?'} | {a['evolved']:.3f} | {a['static']:.3f} | "
                         f"{a['reference']:.3f} | {s.delta['static']} | {s.delta['reference']} | {merged} | "
                         f"{s.run.search.steps} |")
    unpaired = sorted(seed for seed, names in splits.items()
                      if len(names) > 1 and (len(set(names)) > 1 or None in names))
    if unpaired:
        lines += ["", f"Seed(s) {', '.join(map(str, unpaired))}: the rows were not (or not knowingly) scored on the "
                  "same test tasks, so compare their deltas, not their accuracies (bench/efficacy.py --splits-from "
                  "pairs a new benchmark with an earlier one)."]
    return "\n".join(lines) + "\n"


__all__ = ["EfficacyReport", "build", "compare", "iqm", "render", "seed_report"]
