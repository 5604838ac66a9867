"""The benchmark's numbers, computed only from the saved per-task results (`seed-N/results/<arm>.json`).

Per seed: each arm's test accuracy (overall and per difficulty level), and for each comparison the paired
difference with a 95% CI from resampling test tasks (the same tasks in every arm, so per-task difficulty
cancels) and the exact McNemar test on the tasks the two arms disagree on. Across seeds: the mean and
interquartile mean of each difference with stratified bootstrap CIs over seeds (rliable), and the
hierarchical bootstrap (seeds, then tasks within each seed), whose interval also carries each seed's task
noise. The noise floor is a comparison of its own: the reference trained twice with different seeds.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from bench.efficacy_lib.records import SeedRun, without_arm
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

REPORT_VERSION = 2
"""2: evolution starts from the reference harness, with search controls, retraining and leave-one-out."""
COMPARISONS: dict[str, tuple[str, str]] = {
    "evolved - reference": ("evolved", "reference"),
    "evolved - reference at total compute": ("evolved", "reference_total"),
    "evolved - random search": ("evolved", "random_search"),
    "evolved - blind bundle": ("evolved", "blind_bundle"),
    "retrained - reference": ("retrained", "reference_rollout"),
    "noise floor (reference - reference, 2 seeds)": ("reference_rollout", "reference_again"),
    "reference - template": ("reference", "template"),
}
"""Every seed's comparisons: treatment - control, paired over test tasks."""
MAIN = "evolved - reference"
LEVEL = re.compile(r"-L(\d+)-")


class Paired(BaseModel):
    delta: Interval
    mcnemar: McNemar
    differences: list[float]
    """treatment - control per test task, in task-id order: what the hierarchical bootstrap resamples."""


class SeedReport(BaseModel):
    seed: int
    accuracy: dict[str, float]
    by_level: dict[str, dict[str, float]] = Field(default_factory=dict)
    """arm -> level -> accuracy (levels read from the task ids, `-L<n>-`)."""
    level_sizes: dict[str, int] = Field(default_factory=dict)
    n_tasks: int
    paired: dict[str, Paired]
    """Each comparison of COMPARISONS, and `retrained - without-<cand>` for each change left out."""
    run: SeedRun
    diffs: dict[str, int] = Field(default_factory=dict)
    """SWE: arm -> test episodes that left a diff (resolved or not), how far a policy that resolves nothing got."""
    splits: str | None = None
    """The fingerprint of the seed's sealed secret (efficacy/splits.py): rows that share it were scored on the
    same test tasks. The secret itself is never in the report."""


class Summary(BaseModel):
    mean: Interval
    iqm: Interval
    seeds_above_zero: int
    """Seeds whose per-seed CI lies entirely above 0."""
    seeds: int
    hierarchical: Interval


class EfficacyReport(BaseModel):
    version: int = REPORT_VERSION
    domain: str
    preset: str
    seeds: list[SeedReport]
    summary: dict[str, Summary]
    search: dict[str, Any] = Field(default_factory=dict)
    """The evolve arm's search settings (proposer, confirm_steps, archive_parents, ...) this report measured."""


def load_results(seed_dir: Path, arms: tuple[str, ...]) -> dict[str, EvalResult]:
    return {arm: EvalResult.model_validate_json((seed_dir / "results" / f"{arm}.json").read_text())
            for arm in arms}


def level_of(task_id: str) -> str:
    m = LEVEL.search(task_id)
    return m.group(1) if m else "all"


def seed_report(seed_dir: Path, run: SeedRun) -> SeedReport:
    results = load_results(seed_dir, run.arms())
    per_task = {arm: r.per_task() for arm, r in results.items()}
    ids = sorted(set.intersection(*(set(p) for p in per_task.values())))
    if not ids or any(len(p) != len(ids) for p in per_task.values()):
        raise ValueError(f"{seed_dir}: the arms were not scored on the same test tasks")
    levels = sorted({level_of(i) for i in ids})
    accuracy = {arm: sum(p[i] for i in ids) / len(ids) for arm, p in per_task.items()}
    by_level = {arm: {lv: sum(p[i] for i in ids if level_of(i) == lv) / sum(1 for i in ids if level_of(i) == lv)
                      for lv in levels} for arm, p in per_task.items()}
    pairs = dict(COMPARISONS)
    pairs.update({f"retrained - {arm}": ("retrained", arm) for arm in run.left_out})
    paired = {}
    for name, (treatment, control) in pairs.items():
        a, b = [per_task[treatment][i] for i in ids], [per_task[control][i] for i in ids]
        paired[name] = Paired(delta=paired_bootstrap_ci(a, b), mcnemar=mcnemar_exact(a, b),
                              differences=[x - y for x, y in zip(a, b, strict=True)])
    diffs = {arm: r.answered() for arm, r in results.items() if r.domain == "swe"}
    return SeedReport(seed=run.seed, accuracy=accuracy, by_level=by_level, n_tasks=len(ids), paired=paired,
                      diffs=diffs,
                      level_sizes={lv: sum(1 for i in ids if level_of(i) == lv) for lv in levels}, run=run,
                      splits=fingerprint(seed_dir))


def build(domain: str, preset: str, seeds: list[SeedReport], search: dict[str, Any] | None = None
          ) -> EfficacyReport:
    summary = {}
    for name in COMPARISONS:
        values = [s.paired[name].delta.mean for s in seeds]
        summary[name] = Summary(mean=stratified_bootstrap_ci({domain: values}, "mean"),
                                iqm=stratified_bootstrap_ci({domain: values}, "iqm"),
                                seeds_above_zero=sum(1 for s in seeds if s.paired[name].delta.low > 0),
                                seeds=len(seeds),
                                hierarchical=hierarchical_bootstrap_ci([s.paired[name].differences for s in seeds]))
    return EfficacyReport(domain=domain, preset=preset, seeds=seeds, summary=summary, search=search or {})


def targets(report: EfficacyReport) -> list[str]:
    """The efficacy claim's targets, each met or not, from the summary."""
    s = report.summary
    main = s[MAIN].hierarchical
    controls = [name for name in ("evolved - random search", "evolved - blind bundle") if s[name].mean.mean <= 0]
    code_loo = [(sr.seed, c.cand_id) for sr in report.seeds for c in sr.run.changes
                if c.kind == "code" and f"retrained - {without_arm(c.cand_id)}" in sr.paired
                and sr.paired[f"retrained - {without_arm(c.cand_id)}"].delta.mean > 0]

    def said(ok: bool) -> str:
        return "met" if ok else "NOT met"

    return [f"- evolved - reference above 0 with the hierarchical CI's lower bound above 0 ({main}): "
            f"{said(main.low > 0)}",
            f"- evolved above both search controls on average: {said(not controls)}"
            + (f" (not above: {', '.join(controls)})" if controls else ""),
            f"- retrained evolved harness above the reference ({s['retrained - reference'].hierarchical}): "
            f"{said(s['retrained - reference'].mean.mean > 0)}",
            f"- a merged code change that carries part of the gain by leave-one-out: {said(bool(code_loo))}"
            + (f" ({', '.join(f'seed {seed} {cand}' for seed, cand in code_loo)})" if code_loo else "")]


def _arms_line(s: SeedReport) -> str:
    c, w = s.run.compute, s.run.wall_s
    return "; ".join(f"{arm} {s.accuracy[arm]:.3f} ({c[arm].steps} steps, {c[arm].completions} completions, "
                     f"{w.get('evolve' if arm in ('evolved', 'reference') else arm, 0) / 60:.1f} min)"
                     for arm in s.run.arms())


def render(report: EfficacyReport) -> str:
    seeds = report.seeds
    lines = [f"# Efficacy: {report.domain}, preset {report.preset}, {len(seeds)} seed(s)", "",
             "Evolution starts from the reference harness; every arm starts from the same initial policy and is "
             "scored on the seed's sealed test split (named by its secret's fingerprint, never the secret)."
             + (" SWE's splits are the shipped task set's, the same for every seed." if report.domain == "swe"
                else ""), "",
             "## Across seeds", "",
             "95% CIs: stratified bootstrap over seed means (rliable); hierarchical bootstrap over seeds and then "
             "tasks, which also carries each seed's task noise.", "",
             "| comparison | mean | IQM | hierarchical | seeds with CI above 0 |", "|---|---|---|---|---|"]
    for name, m in report.summary.items():
        lines.append(f"| {name} | {m.mean} | {m.iqm} | {m.hierarchical} | {m.seeds_above_zero}/{m.seeds} |")
    lines += ["", "## Targets", "", *targets(report), "", "## Per seed", "",
              "| seed | splits | tasks | " + " | ".join(COMPARISONS) + " |",
              "|---|---|---|" + "---|" * len(COMPARISONS)]
    for s in seeds:
        lines.append(f"| {s.seed} | {s.splits or '?'} | {s.n_tasks} | "
                     + " | ".join(f"{s.paired[n].delta} {s.paired[n].mcnemar}" for n in COMPARISONS) + " |")
    lines += ["", "Cells: mean difference [95% paired bootstrap CI] and exact McNemar (wins-losses, p).", ""]
    for s in seeds:
        levels = list(s.level_sizes)
        lines += [f"### Seed {s.seed}", "", f"Arms (accuracy, policy compute, wall): {_arms_line(s)}.", "",
                  "| arm | " + " | ".join(f"level {lv} ({s.level_sizes[lv]})" for lv in levels) + " |",
                  "|---|" + "---|" * len(levels)]
        for arm, per in s.by_level.items():
            lines.append(f"| {arm} | " + " | ".join(f"{per[lv]:.3f}" for lv in levels) + " |")
        if s.diffs:
            lines += ["", "Test episodes that left a diff: "
                      + ", ".join(f"{arm} {n}/{s.n_tasks}" for arm, n in s.diffs.items()) + "."]
        search, budget = s.run.search, (s.run.settings or {}).get("search_steps")
        lines += ["", f"Search compute besides the policy: evolve {search['evolved'].steps} steps, random search "
                  f"{search['random_search'].steps} steps"
                  f"{f' (each may spend {budget}, `search_steps`)' if budget else ''}. Random search merged: "
                  f"{'; '.join(s.run.random_merged) or 'nothing'}."]
        if s.run.bundle is not None:
            b = s.run.bundle
            lines.append(f"Blind bundle: triggered {', '.join(b.triggered) or 'none'}; applied "
                         f"{', '.join(b.applied) or 'none'}" + (f"; already in the reference: {', '.join(b.already)}"
                                                                 if b.already else "")
                         + (f"; could not apply: {', '.join(b.failed)}" if b.failed else "") + ".")
        lines += ["", "| merged change | gate delta | kind | touched | retrained - without it |",
                  "|---|---|---|---|---|"] if s.run.changes else ["", "The search merged nothing."]
        for c in s.run.changes:
            loo = s.paired.get(f"retrained - {without_arm(c.cand_id)}")
            why = s.run.not_left_out.get(c.cand_id)
            cell = f"{loo.delta} {loo.mcnemar}" if loo else (f"not removable: {why}" if why else "not left out")
            delta = f"{c.delta:+.3f}" if c.delta is not None else "?"
            lines.append(f"| {c.cand_id}: {c.title} | {delta} | {c.kind} | {', '.join(c.parts)} | {cell} |")
        # after the table: a line between its header and its rows would end it
        lines += ["", *(f"The {arm} arm is {source}'s training and result: the same harness files, steps and seed, "
                        f"not run twice." for arm, source in s.run.reused.items())]
        lines.append("")
    lines += ["Not in these intervals: that a seed's search and its controls are single runs; the noise-floor row "
              "is what two trainings of one harness differ by."]
    return "\n".join(lines) + "\n"


def compare(rows: list[tuple[str, EfficacyReport]]) -> str:
    """One line per (search setting, seed): the ablation table of the search's parts, from saved reports.
    Rows of one seed are paired only if they share its splits; a footnote says when they do not."""
    lines = ["| search | seed | splits | evolved | reference | random search | evolved - reference | "
             "evolved - random search | merged | search steps |", "|---|---|---|---|---|---|---|---|---|---|"]
    splits: dict[int, list[str | None]] = {}
    for label, report in rows:
        for s in report.seeds:
            a = s.accuracy
            merged = "; ".join(s.run.merged) or "nothing"
            splits.setdefault(s.seed, []).append(s.splits)
            lines.append(f"| {label} | {s.seed} | {s.splits or '?'} | {a['evolved']:.3f} | {a['reference']:.3f} | "
                         f"{a['random_search']:.3f} | {s.paired[MAIN].delta} | "
                         f"{s.paired['evolved - random search'].delta} | {merged} | "
                         f"{s.run.search['evolved'].steps} |")
    unpaired = sorted(seed for seed, names in splits.items()
                      if len(names) > 1 and (len(set(names)) > 1 or None in names))
    if unpaired:
        lines += ["", f"Seed(s) {', '.join(map(str, unpaired))}: the rows were not (or not knowingly) scored on the "
                  "same test tasks, so compare their deltas, not their accuracies (bench/efficacy.py --splits-from "
                  "pairs a new benchmark with an earlier one)."]
    return "\n".join(lines) + "\n"


__all__ = ["EfficacyReport", "build", "compare", "iqm", "render", "seed_report", "targets"]
