"""The `meta-agent` command line (typer). Each command delegates to a module that does the work."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.console import Console
from rich.table import Table

from meta_agent.coders import CoderName
from meta_agent.commands import llm, review, sandbox, skills, status, tasks, watch
from meta_agent.commands.app import App, option_groups
from meta_agent.domains import DOMAINS, defaults_help
from meta_agent.proposers import PROPOSERS
from meta_agent.tracking import Tracker
from sandboxes import BACKENDS

app = App(
    help=(
        "meta-agent: RL training of LLM policies that evolves its own training harness.\n\n"
        "Start with `meta-agent init --domain math --dir my-harness`, then "
        "`meta-agent rollout --harness my-harness` to train and read the rollout report."
    ),
)
# --help lists commands in the order a user meets them: run, then review, then the tools beside them.
RUN, REVIEW, TOOLS = "Train and evolve", "Review a run", "Tools"
for group in (sandbox, tasks, llm, skills):
    app.add_typer(group.app, name=group.__name__.rsplit(".", 1)[-1], rich_help_panel=TOOLS)
console = Console()


def _print_version(value: bool) -> None:
    if value:
        from meta_agent import __version__

        typer.echo(f"meta-agent {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_print_version,
                                          help="print the version and exit")] = False,
) -> None:
    """meta-agent: RL training of LLM policies that evolves its own training harness."""


DomainOpt = Annotated[str, typer.Option("--domain", "-d", help=DOMAINS.describe())]
OptDomainOpt = Annotated[str | None, typer.Option("--domain", "-d", help=f"{DOMAINS.describe()}; default math")]
SandboxOpt = Annotated[str | None, typer.Option("--sandbox", help=f"auto | {BACKENDS.describe()}")]
TrackerOpt = Annotated[Tracker | None, typer.Option(
    "--tracker", metavar="<tracker>", help="none (default) | tensorboard | trackio | mlflow: training and "
                                           "per-generation metrics as local files (docs/tracking.md)")]
ExecutorOpt = Annotated[Literal["local", "ray"] | None, typer.Option(
    help="where backtests, training runs and evaluations run: local (default) or ray (docs/scale.md)")]
ParallelOpt = Annotated[int | None, typer.Option(  # (>= 1 is checked by ExecutorSettings, with the field named)
    help="local: jobs side by side in worker processes (default 1); ray: most tasks in flight")]
RayAddressOpt = Annotated[str | None, typer.Option(
    help="ray: `auto` (this node's cluster) or ray://HOST:PORT; default: a private local Ray instance")]


def budget_options(minutes: float | None, tokens: int | None, dollars: float | None) -> dict[str, object]:
    """The `budget:` options given (0 or None: not given; `build` keeps the file's value, and `resume` none)."""
    return {"wall_minutes": minutes or None, "llm_tokens": tokens or None, "llm_dollars": dollars or None}


def executor_options(kind: str | None, parallel: int | None, address: str | None) -> dict[str, object]:
    """The `executor:` options given (None: not given; `build` keeps the file's or the run's value)."""
    return {"kind": kind, "parallel": parallel, "ray_address": address}


ConfigOpt = Annotated[Path | None, typer.Option("--config", help="YAML file with defaults for any setting")]


@app.command(rich_help_panel=RUN)
def init(
    domain: DomainOpt = "math",
    dir: Annotated[Path, typer.Option("--dir", help="new directory for the harness git repo")] = Path("harness"),
) -> None:
    """Create a harness git repository for a domain from the shipped template."""
    from meta_agent.domains import domain_entry
    from meta_agent.gitops import init_harness

    repo = init_harness(dir.resolve(), domain_entry(domain).harness_domain)
    console.print(f"created {domain} harness at [bold]{repo.working_dir}[/] ({repo.head.commit.hexsha[:12]})")
    console.print("edit harness.yaml or the code, commit, then: "
                  f"[bold]meta-agent rollout --domain {domain} --harness {dir}[/]")


@app.command(rich_help_panel=RUN)
def rollout(
    domain: OptDomainOpt = None,
    harness: Annotated[Path | None, typer.Option(help="harness repo (default: a new one in the run dir)")] = None,
    policy: Annotated[str | None, typer.Option(help="smollm2 (default) | tiny | a local model/checkpoint dir")] = None,
    steps: Annotated[int | None, typer.Option(help="GRPO steps (default 4)")] = None,
    seed: Annotated[int | None, typer.Option(help="training seed (default 0)")] = None,
    run_dir: Annotated[Path | None, typer.Option(help="output dir (default runs/<time>-rollout-<domain>)")] = None,
    sandbox_name: SandboxOpt = None,
    tracker: TrackerOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Train the policy N GRPO steps under a harness (sandboxed) and write a rollout report."""
    from meta_agent.config import RolloutConfig, build, load_config_file
    from meta_agent.rollout import run_rollout

    file_values = load_config_file(config)
    if sandbox_name:
        file_values.setdefault("sandbox", {})["backend"] = sandbox_name
    cfg = build(RolloutConfig, file_values, {"domain": domain, "harness": harness, "policy": policy,
                                             "steps": steps, "seed": seed, "run_dir": run_dir,
                                             "tracker": tracker})
    run_dir_done, trained = run_rollout(cfg, console)
    r = trained.report
    console.print(f"\nreward {r.reward_mean:.3f} · truncated {100 * r.truncation_rate:.0f}% · "
                  f"zero-variance groups {r.zero_variance_groups}/{r.groups} · "
                  f"dominant failure modes: {', '.join(r.dominant) or 'none'}")
    console.print(f"report: [bold]{run_dir_done / 'train' / 'report.md'}[/] and report.html")
    if cfg.tracker != "none":
        console.print(f"TRL's {cfg.tracker} files: {run_dir_done / 'train' / 'tracker'} "
                      f"(docs/tracking.md says how to open them)")


def eval_(
    policy: Annotated[str, typer.Option(help="smollm2 | tiny | a model or checkpoint dir")] = "smollm2",
    domain: DomainOpt = "math",
    split: Annotated[Literal["selection", "test"], typer.Option(help="which sealed split")] = "selection",
    limit: Annotated[int | None, typer.Option(help="evaluate only the first N tasks")] = None,
    out: Annotated[Path | None, typer.Option(help="write the full result (per task) as JSON")] = None,
    show: Annotated[int, typer.Option(help="per-task rows to print")] = 10,
    config: ConfigOpt = None,
) -> None:
    """Score a policy with the sealed evaluator: accuracy with a 95% bootstrap CI, per-task results.

    The domain's settings (split sizes, task set, scaffold) come from the `math:`/`code:`/`swe:` section
    of --config, as for `rollout` and `evolve`.
    """
    from meta_agent.config import RolloutConfig, build, load_config_file
    from meta_agent.domains import domain_for
    from meta_agent.fsutil import atomic_write_text
    from meta_agent.policy import resolve_policy

    cfg = build(RolloutConfig, load_config_file(config), {"domain": domain})
    path = resolve_policy(policy)
    with console.status(f"evaluating {path.name} on {domain}/{split}"):
        result = domain_for(cfg).evaluate(path, split, limit=limit)
    table = Table("task", "correct", "detail")
    for r in result.results[:show]:
        table.add_row(r.task_id, "yes" if r.correct else "no", r.detail)
    console.print(table)
    s = result.score
    console.print(f"[bold]{domain}/{split}[/]: accuracy {s.mean:.3f}  95% CI [{s.low:.3f}, {s.high:.3f}]  "
                  f"n={s.n}  ({result.wall_time:.0f} s)")
    if out:
        atomic_write_text(out, result.model_dump_json(indent=2))


@app.command(rich_help_panel=RUN)
@option_groups({
    "What trains": ["domain", "harness", "policy", "config"],
    "The search (each part costs training steps)": [
        "generations", "candidates", "train_steps", "selection_limit", "confirm_steps", "search_steps",
        "archive_parents", "repair_turns", "control", "seed", "rerun_known", "no_reuse"],
    "The proposer and its LLM": ["proposer", "model", "diagnostician_model", "coder_model", "coder", "api_base",
                                 "coder_api_base", "skills"],
    "Budgets (a run that reaches one stops cleanly; `resume` continues it)": [
        "dry_run", "print_config", "budget_minutes", "llm_tokens", "llm_dollars"],
    "Where it runs and writes": ["sandbox_name", "executor", "parallel", "ray_address", "run_dir", "tracker"],
})
def evolve(
    domain: OptDomainOpt = None,
    harness: Annotated[Path | None, typer.Option(help="harness repo (default: a new one in the run dir)")] = None,
    policy: Annotated[str | None, typer.Option(help="smollm2 (default) | tiny | a local model/checkpoint dir")] = None,
    generations: Annotated[int | None, typer.Option("--generations", "-g", help="generations (default 2)")] = None,
    candidates: Annotated[int | None, typer.Option("--candidates", "-k", help="per generation (default 2)")] = None,
    train_steps: Annotated[int | None, typer.Option(help=(
        f"GRPO steps per generation and per candidate backtest (default: the domain's: {defaults_help()}"
        f". Fewer steps or tasks make a generation cheaper but its deltas smaller than the gate can see)"))] = None,
    selection_limit: Annotated[int | None, typer.Option(help=(
        "sealed selection tasks each backtest is scored on (default: the domain's, see --train-steps; "
        "the gate's CI narrows with more tasks, and each costs one greedy answer per evaluation)"))] = None,
    confirm_steps: Annotated[int | None, typer.Option(help=(
        "successive halving: the best candidate the gate did not promote after --train-steps trains this many "
        "more steps beside main's run, and the gate judges the longer run (default 0 = off; costs up to "
        "2 x N GRPO steps per generation; math on a CPU: 16, what the efficacy benchmark uses, about 15 min a "
        "generation instead of 8; on the benchmark's seed 1 the training recipe passed only there)"))] = None,
    search_steps: Annotated[int | None, typer.Option(help=(
        "GRPO steps the whole search may spend: candidate backtests, confirmation rungs, noise reruns (default: "
        "no bound). A generation proposes only the candidates the steps left pay for, the rung takes what fits, "
        "and main still trains every generation; give two proposers the same value to compare them at the same "
        "compute"))] = None,
    archive_parents: Annotated[int | None, typer.Option(help=(
        "build up to N of a generation's candidates on an archived one that passed every stage without "
        "being promoted, instead of on main alone (default 0 = off; no extra cost; with 1 the efficacy "
        "benchmark beat the static harness on 2 of 3 seeds instead of 1, docs/evolve.md)"))] = None,
    proposer: Annotated[str | None, typer.Option(help=f"{PROPOSERS.describe()}; default skills (offline)")] = None,
    model: Annotated[str | None, typer.Option(help="litellm model for --proposer llm")] = None,
    diagnostician_model: Annotated[str | None, typer.Option(help="diagnostician model (default: --model)")] = None,
    coder_model: Annotated[str | None, typer.Option(help="model for the coder agents (default: --model)")] = None,
    coder: Annotated[CoderName | None, typer.Option(
        metavar="<coder>", help="builtin (default) | mini-swe-agent | claude-code | codex: who writes each "
                                "candidate's code for --proposer llm (external agents run in the candidate's "
                                "sandbox, reaching only the model endpoint)")] = None,
    api_base: Annotated[str | None, typer.Option(help="OpenAI-compatible base URL (vLLM, llama.cpp, Ollama)")] = None,
    coder_api_base: Annotated[str | None, typer.Option(help="base URL of the coder's model (default: --api-base)")
                              ] = None,
    llm_tokens: Annotated[int | None, typer.Option(help="hard LLM token budget for the run")] = None,
    llm_dollars: Annotated[float | None, typer.Option(help="hard LLM dollar budget for the run")] = None,
    skills: Annotated[list[Path] | None, typer.Option("--skills", help="extra skills library (repeatable)")] = None,
    sandbox_name: SandboxOpt = None,
    repair_turns: Annotated[int | None, typer.Option(
        help="times a candidate that failed static or replay goes back to its proposer with the failure "
             "(default 2; the LLM proposer repairs, the skills proposer does not)")] = None,
    control: Annotated[Literal["static", "none"] | None, typer.Option(
        help="static (default): also train the unchanged harness and compare at the end")] = None,
    rerun_known: Annotated[bool, typer.Option(
        "--rerun-known", help="propose again what an earlier run measured and rejected under the exact same "
                              "conditions (main's tree, starting policy, settings, tasks, skill code); by default "
                              "such a variant counts as tried and the search moves on (it would cost the same "
                              "and, with fixed seeds and greedy evaluation, score the same)")] = False,
    no_reuse: Annotated[bool, typer.Option(
        "--no-reuse", help="train and decode everything this run needs itself; by default a training of the same "
                           "harness tree under the same inputs (policy bytes, seed, steps, tasks, settings, "
                           "meta-agent's code), in this run or an earlier one, is copied from META_AGENT_CACHE/reuse "
                           "instead, and sealed answers for the same weights are shared by every run")] = False,
    budget_minutes: Annotated[float | None, typer.Option(help="stop cleanly after this many minutes")] = None,
    seed: Annotated[int | None, typer.Option(help="run seed (default 0)")] = None,
    run_dir: Annotated[Path | None, typer.Option(help="output dir (default runs/<time>-evolve-<domain>)")] = None,
    tracker: TrackerOpt = None,
    executor: ExecutorOpt = None,
    parallel: ParallelOpt = None,
    ray_address: RayAddressOpt = None,
    config: ConfigOpt = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="print the plan (training runs, GRPO steps, evaluations, LLM sessions) and its wall time "
                          "on this machine, then exit; the first time for a policy, domain and sandbox it times a "
                          "2-step training and one evaluation batch (cached; later runs refine it)")] = False,
    print_config: Annotated[bool, typer.Option(
        "--print-config", help="print the settings this run would use, every default resolved (what the run "
                               "saves; a --config file to start from), then exit")] = False,
) -> None:
    """Evolve a training harness while the policy trains: diagnose, propose, backtest, merge winners.

    Each generation trains the policy under the harness's main branch (in a sandbox), writes a
    rollout report, has the proposer turn its failure modes into candidate branches, backtests each
    candidate (static, replay, train; cheapest first) and merges only candidates that pass every stage
    with the evidence their kind needs. Kill it at any time: `meta-agent resume RUN_DIR` continues.
    """
    from meta_agent.commands.evolve import run_evolve
    from meta_agent.config import EvolveConfig, build, load_config_file

    cfg = build(EvolveConfig, load_config_file(config), {
        "domain": domain, "harness": harness, "policy": policy, "generations": generations,
        "candidates": candidates, "train_steps": train_steps, "selection_limit": selection_limit,
        "confirm_steps": confirm_steps, "search_steps": search_steps,
        "archive_parents": archive_parents, "proposer": proposer, "skills": skills or None,
        "control": control, "seed": seed, "rerun_known": rerun_known or None,
        "reuse_across_runs": False if no_reuse else None, "run_dir": run_dir, "tracker": tracker,
        "repair_turns": repair_turns,
        "sandbox": {"backend": sandbox_name or None},
        "llm": {"model": model or None, "diagnostician_model": diagnostician_model or None,
                "coder_model": coder_model or None, "api_base": api_base or None, "coder": coder or None,
                "coder_api_base": coder_api_base or None},
        "budget": budget_options(budget_minutes, llm_tokens, llm_dollars),
        "executor": executor_options(executor, parallel, ray_address)})
    if print_config:
        import yaml

        typer.echo(yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False), nl=False)
        return
    if dry_run:
        from meta_agent.commands.estimate import estimate
        from meta_agent.policy import resolve_policy

        estimate(cfg, resolve_policy(cfg.policy), console, measure=True)
        return
    run_evolve(cfg, console)


@app.command(rich_help_panel=RUN)
def resume(
    run_dir: Annotated[Path, typer.Argument(help="the run directory of an interrupted `evolve`")],
    budget_minutes: Annotated[float | None, typer.Option(help="a new wall-clock budget")] = None,
    llm_tokens: Annotated[int | None, typer.Option(help="a new total LLM token budget (usage so far counts)")] = None,
    llm_dollars: Annotated[float | None, typer.Option(help="a new total LLM dollar budget")] = None,
    tracker: TrackerOpt = None,
    executor: ExecutorOpt = None,
    parallel: ParallelOpt = None,
    ray_address: RayAddressOpt = None,
) -> None:
    """Continue an interrupted evolve run (killed, crashed or out of budget) where it stopped.

    The budgets of the original command do not carry over (they may be what stopped it); give new ones here.
    --executor/--parallel/--ray-address move the rest of the run elsewhere (e.g. onto a cluster).
    """
    from meta_agent.commands.evolve import run_evolve
    from meta_agent.evolve import load_for_resume

    run_evolve(load_for_resume(run_dir.resolve(), {
        "budget": budget_options(budget_minutes, llm_tokens, llm_dollars),
        "tracker": tracker or None, "executor": executor_options(executor, parallel, ray_address)}),
        console, resume=True)


app.command(rich_help_panel=RUN)(status.status)
app.command(rich_help_panel=RUN)(watch.watch)
app.command(rich_help_panel=REVIEW)(review.history)
app.command(rich_help_panel=REVIEW)(review.show)


@app.command(rich_help_panel=REVIEW)
def lineage(
    run_dir: Annotated[Path, typer.Argument(help="an evolve run directory")],
    rebuild: Annotated[bool, typer.Option(help="rebuild lineage.sqlite from events.jsonl first")] = False,
    check: Annotated[bool, typer.Option(help="read-only: the journal is whole (no torn tail), and the index, "
                                             "the verdict notes and the harness checkout agree with git")] = False,
    json_: Annotated[bool, typer.Option("--json", help="print the candidates and their stages as JSON")] = False,
    html: Annotated[Path | None, typer.Option(help="write one self-contained HTML page of the run to this file "
                                                   "(candidate tree, scores per generation, evolved vs static)")
                    ] = None,
) -> None:
    """Show a run's candidates with their stages and verdicts (from the lineage index)."""
    import git

    from meta_agent.lineage import check_run, lineage_json, query, rebuild_index
    from meta_agent.runinfo import read_run_info

    if rebuild:
        rebuild_index(run_dir)
    if html is not None:
        from meta_agent.report.lineage_page import write_lineage_html

        console.print(f"wrote {write_lineage_html(run_dir, html)}")
    elif json_:
        typer.echo(lineage_json(run_dir))
        return
    else:
        table = Table("candidate", "kind", "skills", "verdict", "stage", "delta", "branch")
        for row in query(run_dir, "SELECT * FROM candidates ORDER BY gen, k"):
            delta = "" if row["delta"] is None else f"{row['delta']:+.3f}"
            table.add_row(row["cand_id"], row["kind"], row["skills"], row["verdict"] or "running",
                          row["stage"] or "", delta, row["branch"])
        console.print(table)
    if check:
        problems = check_run(run_dir, git.Repo(read_run_info(run_dir).harness))
        for p in problems:
            console.print(f"[red]mismatch:[/] {p}")
        console.print("[green]journal, index, notes and checkout agree with git[/]" if not problems
                      else f"{len(problems)} mismatches")
        if problems:
            raise typer.Exit(1)


@app.command(rich_help_panel=REVIEW)
def track(
    run_dir: Annotated[Path, typer.Argument(help="an evolve run directory (finished or not)")],
    tracker: Annotated[Tracker, typer.Option("--tracker", help="which tracker's files to write")] = "tensorboard",
) -> None:
    """Write a run's metrics to RUN/tracker/BACKEND (as `evolve --tracker` does after every generation).

    Per generation: main's selection score and CI, the noise floor, candidates proposed, promoted,
    rejected and merged with their deltas, time and LLM spend; per training run its optimizer steps;
    at the end evolved vs static on the test split. Prints the command that opens them.
    """
    from meta_agent.eventlog import require_run
    from meta_agent.tracking.export import check_available, sync_tracker, viewer_hint

    if tracker == "none":
        raise typer.BadParameter("choose tensorboard, trackio or mlflow", param_hint="--tracker")
    require_run(run_dir)
    check_available(tracker)
    problem = sync_tracker(run_dir.resolve(), tracker)
    if problem:
        console.print(f"[red]error:[/] {problem}")
        raise typer.Exit(1)
    console.print(viewer_hint(run_dir, tracker))


@app.command(rich_help_panel=REVIEW)
def report(run_dir: Annotated[Path, typer.Argument(help="a run directory (or one training dir in it)")]) -> None:
    """Re-render the rollout report(s) of a run from its files."""
    from meta_agent.commands.rerender import rerender

    for path in rerender(run_dir.resolve()):
        console.print(f"wrote {path}")


app.command(rich_help_panel=REVIEW)(review.prune)
app.command(name="eval", rich_help_panel=TOOLS)(eval_)


def main() -> None:
    try:
        app()
    except BrokenPipeError:
        sys.exit(1)
