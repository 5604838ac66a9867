"""A whole evolve run: set it up (or pick it up again), run its generations, finish it.

Finishing means: the static control arm (the initial harness trained with the same steps,
seeds and policy chain), one evaluation of the evolved and the static policy on the sealed
test split, a paired comparison, summary.md / summary.json and lineage.html in the run dir.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import git
from filelock import FileLock, Timeout

from meta_agent.agents.base import BudgetAware, Proposer
from meta_agent.config import EvolveConfig, build
from meta_agent.crashpoints import crashpoint
from meta_agent.domains import DOMAINS, Domain, EvalResult, domain_entry, domain_for
from meta_agent.domains.base import Split, shards_with_work
from meta_agent.errors import RunDirError, UserError
from meta_agent.eventlog import EventLog
from meta_agent.evolve.context import Budget, Reporter, RunContext
from meta_agent.evolve.estimate import eval_batch_of
from meta_agent.evolve.generation import Generation
from meta_agent.evolve.static_arm import static_policy
from meta_agent.evolve.steps import eval_jobs, finish_eval, results
from meta_agent.execution.base import make_executor
from meta_agent.gitops import GitOpsError, clear_stale_locks, run_harness, sync_checkout
from meta_agent.journal import FinalEval, GenerationDone, Resumed, RunDone, RunStarted
from meta_agent.journal_keys import RUN_DONE, RUN_START, final_key, gen_key
from meta_agent.lineage import rebuild_index
from meta_agent.policy import resolve_policy
from meta_agent.proposers import PROPOSERS
from meta_agent.report.lineage_page import write_run_page
from meta_agent.report.summary import RunSummary, write_summary
from meta_agent.runinfo import RUN_FILE, RunInfo, default_run_dir, read_run_info, write_run_info
from meta_agent.sealed import fingerprint, sealed_backend
from meta_agent.serving import check_serving, evaluator_of
from meta_agent.skills.runner import prepare_kit
from meta_agent.skills.store import SkillSet, default_skill_set
from meta_agent.stats import Interval, paired_bootstrap_ci
from meta_agent.tracking.export import check_available, sync_tracker
from meta_agent.training import write_train_tasks

LOCK_FILE = "meta-agent.lock"


class RunLocked(GitOpsError):
    """Another meta-agent run holds the harness repo."""


def make_proposer(cfg: EvolveConfig, skills: SkillSet, run_dir: Path) -> Proposer:
    """The proposer `cfg.proposer` names (a registered name or a `module:Class` plugin)."""
    cls: Any = PROPOSERS.get(cfg.proposer)
    return cls.from_config(cfg, skills, run_dir)


@contextmanager
def repo_lock(repo: git.Repo, run_dir: Path) -> Iterator[None]:
    """One run per harness repo at a time (the lock dies with the process, even on SIGKILL)."""
    path = Path(repo.git_dir) / LOCK_FILE
    owner = path.with_suffix(".owner")
    lock = FileLock(str(path))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        other = owner.read_text().strip() if owner.exists() else "another process"
        raise RunLocked(f"harness repo {repo.working_dir} is in use by a meta-agent run ({other}); "
                        f"wait for it to finish or stop it first") from None
    owner.write_text(f"run {run_dir}")
    try:
        yield
    finally:
        owner.unlink(missing_ok=True)
        lock.release()


def _harness(cfg: EvolveConfig, run_dir: Path, repairs: list[str]) -> git.Repo:
    repo = run_harness(run_dir, cfg.harness, domain_entry(cfg.domain).harness_domain)
    with repo_lock(repo, run_dir):  # no other run is using the repo, so what a killed one left can go
        for lock in clear_stale_locks(repo):
            repairs.append(f"removed {lock} from {repo.git_dir}, left by a git command that was killed")
        if sync_checkout(repo, "main"):  # a run killed between moving main and updating the checkout
            repairs.append(f"brought the checkout of {repo.working_dir} up to main, which a merge had moved")
    if cfg.harness is None:
        return repo
    if "main" not in [h.name for h in repo.heads]:
        raise GitOpsError(f"harness {repo.working_dir} has no branch 'main': meta-agent merges winners into main")
    if repo.is_dirty(untracked_files=False):
        raise GitOpsError(f"harness {repo.working_dir} has uncommitted changes; commit or stash them first, "
                          "because meta-agent merges into main")
    return repo


def _check_evaluation(cfg: EvolveConfig) -> None:
    """What the run's evaluations need, checked before anything of the run is written."""
    if cfg.executor.kind == "local":  # evaluations run on this machine (on Ray, each node checks its own)
        check_serving(evaluator_of(cfg.domain_settings()))
    shards = cfg.executor.eval_shards
    if shards > 1 and "shard" not in inspect.signature(DOMAINS.get(cfg.domain).evaluate).parameters:
        raise UserError(f"executor.eval_shards is {shards}, but the {cfg.domain} domain's evaluate takes no "
                        f"`shard` (docs/plugins.md); set executor.eval_shards: 1")


def idle_shards(cfg: EvolveConfig, domain: Domain) -> str | None:
    """Why some of `executor.eval_shards` jobs would get no task, or None: shards cut only at the domain's
    evaluation batches (so merged answers equal one job's), so a split with fewer batches than shards leaves
    the rest idle, which a user who asked for N workers would not expect."""
    shards = cfg.executor.eval_shards
    if shards <= 1:
        return None
    align = eval_batch_of(cfg)
    idle = []
    splits: tuple[tuple[Split, int | None], ...] = (("selection", cfg.selection_limit), ("test", cfg.test_limit))
    for split, limit in splits:
        size = len(domain.tasks(split)[:limit])
        busy = shards_with_work(size, shards, align)
        if busy < shards:
            idle.append(f"a {split} evaluation of {size} tasks in batches of {align} gives {busy} of them work")
    if not idle:
        return None
    return (f"executor.eval_shards is {shards}, but shards are cut only at evaluation batches (so that their merged "
            f"answers equal one job's): {'; '.join(idle)}. The other shard jobs finish at once with nothing to do; "
            "a smaller eval_batch_size or fewer shards uses the workers you have")


def prepare(cfg: EvolveConfig, reporter: Reporter, resume: bool = False) -> RunContext:
    """A run's context: set up (run.json first, then the harness repo, then `run/start`, each safe to
    redo after a kill), or picked up again, with what loading had to repair in `ctx.repairs`."""
    run_dir = (cfg.run_dir or default_run_dir("evolve", cfg.domain)).resolve()
    check_available(cfg.tracker)
    if not resume and (run_dir / "events.jsonl").exists():
        raise RunDirError(f"{run_dir} already holds a run; continue it with `meta-agent resume {run_dir}`")
    _check_evaluation(cfg)
    executor = make_executor(cfg.executor)  # Ray missing or unreachable: said here, before anything runs
    run_dir.mkdir(parents=True, exist_ok=True)
    cfg = cfg.model_copy(update={"run_dir": run_dir})
    log = EventLog(run_dir)
    repairs = list(log.repairs)
    started = log.done(RUN_START, RunStarted)
    root_policy = Path(started.root_policy) if started else resolve_policy(cfg.policy)
    if not started:
        harness = cfg.harness.resolve() if cfg.harness else run_dir / "harness"
        write_run_info(run_dir, RunInfo(command="evolve", domain=cfg.domain, harness=str(harness),
                                        policy=str(root_policy), created=time.strftime("%Y-%m-%dT%H:%M:%S"),
                                        settings=cfg.model_dump(mode="json")))
        crashpoint("setup/after-run-info", run_dir)
    repo = _harness(cfg, run_dir, repairs)
    if not started:
        crashpoint("setup/after-harness", run_dir)
    domain = domain_for(cfg)
    skills = default_skill_set(cfg.skills, run_dir)
    ctx = RunContext(
        cfg=cfg, run_dir=run_dir, run_id=run_dir.name, repo=repo, domain=domain,
        sandbox=sealed_backend(cfg.sandbox.backend), root_policy=root_policy,
        tasks_file=write_train_tasks(domain, run_dir / "inputs"), skills=skills,
        proposer=make_proposer(cfg, skills, run_dir), log=log, reporter=reporter,
        budget=Budget(wall_seconds=cfg.budget.wall_minutes * 60 if cfg.budget.wall_minutes else None),
        kit_dir=prepare_kit(run_dir / ".skillkit"), repairs=repairs, executor=executor,
    )
    idle = idle_shards(cfg, domain)
    if idle:
        reporter.phase(idle)
    if isinstance(ctx.proposer, BudgetAware):
        ctx.budget.extra_checks.append(ctx.proposer.budget_reason)
    event = ctx.step(RUN_START, RunStarted, lambda: RunStarted(
        run_id=ctx.run_id, domain=cfg.domain, harness=str(repo.working_dir),
        started=time.strftime("%Y-%m-%dT%H:%M:%S"), root_policy=str(root_policy),
        initial_main=repo.commit("main").hexsha, epoch=int(time.time()), sealed=fingerprint()))
    if event.sealed and event.sealed != fingerprint():
        raise UserError(f"{run_dir} was started with another sealed-split secret (fingerprint {event.sealed}, "
                        f"here {fingerprint()}); resume it where it started, or set META_AGENT_SEALED_SECRET "
                        "to that install's secret")
    if started is not None:  # a resume: from the last process's last event to now, the run was down
        log.append(Resumed(t=time.time()))
    return ctx


def load_for_resume(run_dir: Path, overrides: dict[str, Any]) -> EvolveConfig:
    if not (run_dir / RUN_FILE).is_file():
        raise RunDirError(f"{run_dir} is not an evolve run directory (no {RUN_FILE})")
    info = read_run_info(run_dir)
    if info.command != "evolve":
        raise RunDirError(f"{run_dir} holds a `{info.command}` run, which cannot be resumed")
    # the settings saved at the start, every default resolved, under the options given (`resume --executor ray`
    # keeps the rest of the run's executor settings); the original budgets do not carry over: they may be
    # what stopped it
    saved = {**info.settings, "budget": {}}
    return build(EvolveConfig, saved, {**overrides, "run_dir": str(run_dir)})


def run(ctx: RunContext) -> RunSummary:
    """All generations, then the final comparison. Returns the summary."""
    with repo_lock(ctx.repo, ctx.run_dir):
        try:
            policy, history = ctx.root_policy, None
            for g in range(ctx.cfg.generations):
                ran = ctx.log.done(gen_key(g, "done"), GenerationDone) is None
                done = Generation(ctx, g, policy, history).run()
                policy, history = Path(done.next_policy), Path(done.history)
                if ran:  # a resume passes finished generations; the export after the run covers them
                    _track(ctx)
            summary = finalize(ctx, policy)
        finally:
            ctx.executor.close()
    rebuild_index(ctx.run_dir)
    write_run_page(ctx.run_dir, ctx.reporter.phase)
    _track(ctx)
    return summary


def _track(ctx: RunContext) -> None:
    """Rebuild RUN/tracker/<backend>/ from the journal; a tracker that fails costs its files, not the run."""
    problem = sync_tracker(ctx.run_dir, ctx.cfg.tracker)
    if problem:
        ctx.reporter.phase(f"tracker: {problem}; the run goes on (`meta-agent track {ctx.run_dir} "
                           f"--tracker {ctx.cfg.tracker}` retries)")


def finalize(ctx: RunContext, evolved: Path) -> RunSummary:
    static = static_policy(ctx) if ctx.cfg.control == "static" else None
    final_dir = ctx.run_dir / "final"
    final_dir.mkdir(exist_ok=True)

    def compare() -> FinalEval:
        """The evolved policy and the static control on the sealed test split, side by side as the executor
        allows (each in `eval_shards` shards)."""
        arms = {"evolved": evolved, **({"static": static} if static is not None else {})}
        ctx.reporter.phase(f"final: evaluating the {' and the '.join(arms)} policy on the sealed test split")
        jobs = []
        for arm, policy in arms.items():
            (final_dir / f"{arm}-test.json").unlink(missing_ok=True)
            jobs += eval_jobs(ctx, final_key(f"{arm}-test"), f"the {arm} policy's test evaluation", policy,
                              final_dir / f"{arm}-test.json", "test", ctx.cfg.test_limit)
        results(ctx, jobs)
        ev = finish_eval(ctx, final_dir / "evolved-test.json")
        scored = {"evolved": ev}
        out = FinalEval(evolved_policy=str(evolved), evolved=ev.score)
        if static is not None:
            st = scored["static"] = finish_eval(ctx, final_dir / "static-test.json")
            out = out.model_copy(update={"static_policy": str(static), "static": st.score, "paired": _paired(ev, st)})
        return out.model_copy(update=_diffs(scored))

    result = ctx.step(final_key("compare"), FinalEval, compare)
    final_main = ctx.repo.commit("main").hexsha
    summary = write_summary(ctx.run_dir, ctx.log, result.model_dump(mode="json", exclude_none=True))
    crashpoint("finalize/after-summary", ctx.run_dir)
    ctx.step(RUN_DONE, RunDone, lambda: RunDone(run_id=ctx.run_id, final_main=final_main))
    return summary


def _diffs(arms: dict[str, EvalResult]) -> dict[str, Any]:
    """SWE: each arm's test episodes that left a diff (an episode's `answer` is its graded diff)."""
    if any(r.domain != "swe" for r in arms.values()):
        return {}
    return {"diffs": {arm: r.answered() for arm, r in arms.items()}, "tasks": len(arms["evolved"].results)}


def _paired(a: EvalResult, b: EvalResult) -> Interval:
    ids = [r.task_id for r in a.results]
    return paired_bootstrap_ci([a.per_task()[i] for i in ids], [b.per_task()[i] for i in ids])
