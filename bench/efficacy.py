"""Does evolving the harness beat the expert one? Evolution starts from the reference harness (the way the
field sets up GRPO for a small model with LoRA, bench/efficacy_lib/reference.py) and is compared with it, and
with two search controls, at equal policy compute, on a test split no one tuned on.

    python bench/efficacy.py --preset cpu [--seeds 3] [--out runs/efficacy-cpu]
    python bench/efficacy.py --preset tiny --seeds 1          # the machinery on the tiny policy, minutes
    python bench/efficacy.py --domain code                    # code (HumanEval, CodeI/O): the same arms
    python bench/efficacy.py --domain swe                     # SWE bug fixes (the easy tier), a smaller search
    python bench/efficacy.py --preset cpu --proposer llm --model openai/my-model --api-base http://host:8000/v1
    # an ablation, paired task by task with an earlier benchmark of yours (the same seed's sealed splits):
    python bench/efficacy.py --preset cpu --seed 2 --archive-parents 0 \\
        --splits-from runs/efficacy-cpu --out runs/efficacy-cpu-no-archive
    python bench/efficacy.py --compare mine=runs/efficacy-cpu ablation=runs/efficacy-cpu-no-archive

Per seed, from the same initial policy (bench/efficacy_lib/arms.py says how each arm is run):
  evolved            `meta-agent evolve` from the reference (the proposer under test)
  reference          the reference with the same steps and completions (that run's control arm)
  reference_total    the reference for the evolve run's total steps (policy + backtests + noise reruns)
  random_search      the same search with skills and parameters drawn blind (`--proposer random-matched`: as
                     many candidates a generation as the skills proposer would propose; `random` for an LLM),
                     with the same search-step budget (--search-steps)
  blind_bundle       the reference plus every seed skill whose trigger fires, applied at once
  retrained          the final evolved harness trained again from the initial policy (reference_rollout's
                     result when the search merged nothing: the same files, steps and seed)
  reference_rollout  the reference trained the same way; reference_again: with another seed (noise floor)
  template           the template harness (context)
  without-<change>   the final harness without one of its top merged changes (leave-one-out; reference_rollout's
                     result when that leaves the reference's files)

Each seed draws a fresh sealed secret (its splits) the first time it runs, kept in OUT/seed-N/data and
named in the report only by its fingerprint; --splits-from is the one way to reuse one. Score a table's
test split once: choose settings on the selection split or on seeds you then discard.

Every arm's per-task results are saved in OUT/seed-N/results/<arm>.json, and the report (OUT/report.md,
report.json) is computed from them alone: for the seeds of this invocation and every seed finished earlier in
the same --out with the same settings (so --seed 0, then --seed 1 in a later session, builds one report).
Re-running with the same --out resumes: finished arms are kept. SIGTERM or Ctrl-C stops the running arms
too; run the command again to resume. On 2 or more cores a seed's arms run in two lanes side by side (the
evolve arm in one, the random search in the other, then the other arms from one queue both lanes take from:
those that need only the planned steps are queued first, for the lane whose search ends first, and those made
from the evolve run, longest first, when it ends), each child with half the cores while both lanes run:
0.67-0.71 of the wall one after the other, at identical answers (bench/efficacy_lanes.py); --lanes 1 runs
them one after the other.
`make bench` leaves this one out (it runs for hours at --preset cpu); run it on its own.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.efficacy_lib.arms import SeedArms  # noqa: E402
from bench.efficacy_lib.commands import stop_on_sigterm  # noqa: E402
from bench.efficacy_lib.finished import check_settings, finished_seeds  # noqa: E402
from bench.efficacy_lib.report import EfficacyReport, build, compare, render, seed_report  # noqa: E402
from bench.efficacy_lib.splits import adopt, fingerprint  # noqa: E402
from meta_agent.errors import UserError  # noqa: E402
from meta_agent.fsutil import atomic_write_text  # noqa: E402

MATH_EVAL = {"train_size": 200, "selection_size": 100, "test_size": 200, "sealed_levels": {1: 0.4, 2: 0.4, 3: 0.2}}
"""200 test tasks: the 95% CI of a paired difference is about +-0.05 wide where 60 gave +-0.10. No level-4
(word problem) tasks in the sealed splits: every arm of every seed scored 0 of 6 on them in the template-start
benchmark (bench/results/efficacy-cpu-archive), so they only dilute a difference; level 3 stays with a small
share (the reference solved 1 of 45 there)."""
SWE_EVAL = {"tiers": ["easy"], "train_size": None, "selection_size": 20, "test_size": 56}
"""The easy tier of the shipped default set (docs/swe-tasks.md): every easy train instance is the harness's
data; 20 of the 57 easy selection instances per gate evaluation (about 5 min each under the sealed protocol
on 2 cores); all 56 easy test instances. Medium and hard stay out: under the protocol no arm has resolved
one, so they would only dilute a difference."""
DOMAINS = ("math", "code", "swe")
"""Domains with a reference harness (bench/efficacy_lib/reference.py)."""
PRESETS: dict[str, dict[str, Any]] = {
    # The machinery, not a measurement: seconds of training on a 3M-parameter random model.
    "tiny": {"policy": "tiny", "generations": 1, "candidates": 1, "train_steps": 1, "noise_reruns": 1,
             "selection_limit": 6, "test_limit": 6, "leave_one_out": 1,
             "math": {"train_size": 24, "selection_size": 6, "test_size": 6, "eval_max_new_tokens": 6},
             "code": {"sources": ["humaneval"], "train_size": 24, "selection_size": 6, "test_size": 6,
                      "eval_max_new_tokens": 16},
             # a short sealed episode: what is tested is the machinery, and a random policy resolves nothing
             "swe": {"tiers": ["easy"], "train_size": 8, "selection_size": 6, "test_size": 6,
                     "scaffold": {"max_turns": 2, "turn_tokens": 16}}},
    # SmolLM2-135M with LoRA on 2 CPU cores (about 8 s per GRPO step). 100 selection tasks (about 45 s per
    # evaluation): after 8 steps the reference settings gained 19 and lost 2 of 100 against the template, a
    # paired 98.3% CI of [+0.077, +0.280]; on 30 tasks, 4 and 0, a CI no gate can pass
    # (bench/results/policy-movement-reference). The confirmation rung (16 more steps for the best unpromoted
    # candidate) and one archive parent per generation are the search settings the template-start benchmark
    # kept (bench/results/efficacy-cpu-archive). Both searches get the same 48 search steps, generations x
    # candidates x train_steps: every slot's short rung once, so the rung runs only on steps a generation's
    # failed candidates left. Unbounded, the random control's blind draws that scored exactly 0 went to the
    # rung and it trained 144 steps to the evolve arm's 32, which set a seed's time (bench/results/
    # efficacy-remeasure/same-splits); at 64 both spent 64 and the seed took 48.6 min (efficacy-search-steps/
    # budget-64). Chosen for time, not from a score: on the reference-start runs on record the rung judged 6
    # candidates on the selection split and promoted none.
    "cpu": {"policy": "smollm2", "generations": 3, "candidates": 2, "train_steps": 8, "noise_reruns": 1,
            "confirm_steps": 16, "search_steps": 48, "archive_parents": 1, "selection_limit": 100, "test_limit": 200,
            "leave_one_out": 2, "math": MATH_EVAL,
            # code (not yet measured): every HumanEval and CodeI/O problem the default build makes
            "code": {"train_size": 256, "selection_size": 60, "test_size": 100},
            "swe": SWE_EVAL,
            # A reference GRPO step on SWE takes 80-120 s here (4 episodes of up to 6 x 128 tokens), ten times a
            # math step, and a sealed evaluation 15 s an instance: the math search's size would take a day.
            "search_by_domain": {"swe": {"generations": 2, "candidates": 2, "train_steps": 4, "confirm_steps": 0,
                                         "selection_limit": 20, "test_limit": 56, "leave_one_out": 1}}},
    # One GPU: longer generations, more candidates, larger splits (not yet measured).
    "gpu": {"policy": "smollm2", "generations": 6, "candidates": 4, "train_steps": 40, "noise_reruns": 1,
            "archive_parents": 1, "selection_limit": 100, "test_limit": 300, "leave_one_out": 3,
            "math": {"train_size": 2000, "selection_size": 100, "test_size": 300,
                     "sealed_levels": MATH_EVAL["sealed_levels"]},
            "code": {"train_size": 256, "selection_size": 60, "test_size": 100},
            "swe": {**SWE_EVAL, "selection_size": 57}},
}


def preset_for(name: str, domain: str) -> dict[str, Any]:
    """The preset's settings for `domain`: its search sized for that domain where it says so."""
    preset = {k: v for k, v in PRESETS[name].items() if k != "search_by_domain"}
    return {**preset, **PRESETS[name].get("search_by_domain", {}).get(domain, {})}


def arm_settings(preset_name: str, sandbox: str, llm: dict[str, Any] | None = None, domain: str = "math",
                 **search: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(what `rollout` and `eval` take, the evolve arm's config): the preset for `domain`, with the search
    settings given on the command line (None: the preset's)."""
    preset = preset_for(preset_name, domain)
    common = {"domain": domain, "policy": preset["policy"], "sandbox": {"backend": sandbox}, domain: preset[domain]}
    chosen = {k: v for k, v in search.items() if v is not None}
    own = {k: v for k, v in preset.items() if k not in ("leave_one_out", *DOMAINS)}
    evolve = {**common, "proposer": "skills", **own, **chosen}
    if llm:
        evolve["llm"] = llm
    return common, evolve


def at_least(low: int) -> Callable[[str], int]:
    """An argparse type: an integer >= low (a usage error naming the option, before any arm runs)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value} is below {low}")
        return value
    return parse


def saved_report(folder: Path) -> EfficacyReport:
    """A finished benchmark's report.json, or the reason it cannot be compared."""
    path = folder / "report.json"
    if not path.is_file():
        raise UserError(f"{folder} has no report.json: is it a finished benchmark's --out?")
    try:
        return EfficacyReport.model_validate_json(path.read_text())
    except ValueError as e:
        raise UserError(f"{path} is not an efficacy report of this benchmark ({str(e).splitlines()[0]}); one written "
                        f"before evolution started from the reference has its table in report.md") from None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", choices=sorted(PRESETS), default="cpu",
                    help="tiny: the machinery on a random 3M model, minutes; cpu (default): SmolLM2-135M on 2 CPU "
                         "cores, about 40-47 min a seed here in two lanes (the evolve arm beside the random search, "
                         "each bounded by --search-steps, then the other arms from one queue; an arm whose "
                         "harness is the reference's files takes reference_rollout's result; docs/evolve.md, "
                         "\"Time\"); gpu: sized for one GPU (not yet measured)")
    ap.add_argument("--domain", choices=DOMAINS, default="math",
                    help="math (default; the measured one), code (HumanEval and CodeI/O; not yet measured) or swe "
                         "(the easy tier of the shipped bug-fix set under the sealed protocol; at --preset cpu a "
                         "smaller search, 2 generations of 2 candidates and 4 steps, and still hours a seed: see "
                         "docs/swe-tasks.md)")
    ap.add_argument("--seeds", type=at_least(1), default=3, help="seeds 0..N-1 (default 3)")
    ap.add_argument("--seed", type=at_least(0), action="append", metavar="N",
                    help="run only seed N (repeatable; instead of --seeds); the report still covers the seeds "
                         "finished earlier in --out with the same settings")
    ap.add_argument("--splits-from", type=Path, metavar="OUT",
                    help="score each seed on the same sealed splits as that seed of an earlier benchmark (its "
                         "secret), so an ablation's rows are paired with it task by task")
    ap.add_argument("--out", type=Path,
                    help="results folder (default ./runs/efficacy-<preset>, beside evolve's runs; bench/results holds "
                         "the measurements the docs report: compare yours with them, --compare)")
    ap.add_argument("--sandbox", default="auto",
                    help="where harness code runs: auto (default: Docker when an engine answers, else bubblewrap), "
                         "bwrap or docker")
    ap.add_argument("--confirm-steps", type=at_least(0), default=None,
                    help="the evolve arm's confirmation rung (successive halving; default: the preset's)")
    ap.add_argument("--search-steps", type=at_least(0), default=None,
                    help="GRPO steps each search (the evolve arm's and the random control's) may spend on backtests, "
                         "confirmation rungs and noise reruns (default: the preset's, cpu 48; 0: no bound)")
    ap.add_argument("--compare", nargs="+", metavar="LABEL=OUT",
                    help="print the ablation table of finished benchmarks (their report.json) and exit")
    ap.add_argument("--archive-parents", type=at_least(0), default=None,
                    help="the evolve arm's archive parents per generation (default: the preset's)")
    ap.add_argument("--lanes", type=int, choices=(1, 2), default=min(2, os.cpu_count() or 1),
                    help="2 (default on 2 or more cores): a seed's arms in two lanes side by side, each child with "
                         "half the cores: the evolve arm in one, the random search in the other, then the other "
                         "arms from one queue (bench/efficacy_lanes.py measures what that saves); 1: every "
                         "arm after the other, with every core")
    ap.add_argument("--proposer", choices=("skills", "llm"), default="skills",
                    help="the evolve arm's proposer: skills (default, offline) or llm (needs --model)")
    ap.add_argument("--model", help="litellm model for --proposer llm, e.g. openai/Qwen2.5-7B-Instruct")
    ap.add_argument("--api-base", help="OpenAI-compatible base URL for --model (a local vLLM or llama.cpp server)")
    args = ap.parse_args()
    if args.proposer == "llm" and not args.model:
        ap.error("--proposer llm needs --model (and --api-base for a local server)")
    if args.model and args.proposer != "llm":
        ap.error("--model is for --proposer llm")
    if args.compare:
        rows = []
        for item in args.compare:
            label, _, folder = item.rpartition("=")
            report = saved_report(Path(folder))
            for s in report.seeds:  # reports written before the splits were recorded
                s.splits = s.splits or fingerprint(Path(folder) / f"seed-{s.seed}")
            rows.append((label or folder, report))
        print(compare(rows))
        return
    stop_on_sigterm()  # from here on the driver runs arms as child processes
    # Not into bench/results: its folders are the docs' records, and a run there would resume (or refuse)
    # their seeds and overwrite their settings files.
    default = f"efficacy-{args.preset}" + ("" if args.domain == "math" else f"-{args.domain}")
    out = (args.out or Path("runs") / default).resolve()
    out.mkdir(parents=True, exist_ok=True)
    preset = preset_for(args.preset, args.domain)
    llm = {k: v for k, v in (("model", args.model), ("api_base", args.api_base)) if v}
    common, settings = arm_settings(args.preset, args.sandbox, llm, args.domain, confirm_steps=args.confirm_steps,
                                    archive_parents=args.archive_parents, proposer=args.proposer,
                                    search_steps=args.search_steps or None)
    if args.search_steps == 0:
        settings.pop("search_steps", None)
    run_config, evolve_config = out / "run.yaml", out / "evolve.yaml"
    atomic_write_text(run_config, yaml.safe_dump(common))  # rollout and eval take only these
    atomic_write_text(evolve_config, yaml.safe_dump(settings))
    search = {k: settings.get(k, 0) for k in ("proposer", "confirm_steps", "search_steps", "archive_parents")}
    chosen_seeds = sorted(set(args.seed)) if args.seed else list(range(args.seeds))
    seeds = []
    for seed in chosen_seeds:
        arms = SeedArms(out, evolve_config, run_config, seed, args.domain, preset["test_limit"],
                        leave_one_out=preset["leave_one_out"], sandbox=args.sandbox, lanes=args.lanes)
        check_settings(arms.dir, settings)
        if args.splits_from:
            adopt(arms.dir, args.splits_from.resolve())
        seeds.append(seed_report(arms.dir, arms.run()))
    earlier, left_out = finished_seeds(out, set(chosen_seeds), settings)
    seeds = sorted(seeds + [seed_report(d, run) for d, run in earlier], key=lambda s: s.seed)
    if earlier:
        print(f"the report also covers seed(s) {', '.join(str(r.seed) for _, r in earlier)}, finished earlier in "
              f"{out} with the same settings")
    for line in left_out:
        print(f"left out of the report: {line}")
    report = build(args.domain, args.preset, seeds, search)
    atomic_write_text(out / "report.json", report.model_dump_json(indent=2))
    text = render(report)
    atomic_write_text(out / "report.md", text)
    print(text)
    print(f"per-task results and the report: {out}")


if __name__ == "__main__":
    try:
        main()
    except UserError as e:  # a failed arm, or results that cannot be trusted: the reason, not a traceback
        raise SystemExit(f"efficacy: {e}") from None
