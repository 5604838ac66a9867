"""`meta-agent rollout`: train N steps under a harness in a sandbox and write a rollout report."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from rich.console import Console

from meta_agent.config import RolloutConfig
from meta_agent.domains import domain_entry, domain_for
from meta_agent.errors import RunDirError
from meta_agent.gitops import run_harness
from meta_agent.harness_runner import StepSeen
from meta_agent.policy import resolve_policy
from meta_agent.progress import progress_bar, step_text
from meta_agent.report.render import write_report
from meta_agent.runinfo import RunInfo, default_run_dir, write_run_info
from meta_agent.sealed import sealed_backend
from meta_agent.tracking.export import check_available
from meta_agent.training import TrainedRun, train_commit, write_train_tasks


def run_rollout(cfg: RolloutConfig, console: Console) -> tuple[Path, TrainedRun]:
    run_dir = (cfg.run_dir or default_run_dir("rollout", cfg.domain)).resolve()
    check_available(cfg.tracker)
    if (run_dir / "train" / "report.json").exists():
        raise RunDirError(f"{run_dir} already holds a finished rollout; pass a new --run-dir")
    run_dir.mkdir(parents=True, exist_ok=True)
    repo = run_harness(run_dir, cfg.harness, domain_entry(cfg.domain).harness_domain)
    commit = repo.head.commit.hexsha
    console.print(f"[bold]harness[/] {repo.working_dir} @ {commit[:12]}")
    with console.status("preparing the policy (first use converts SmolLM2 once, ~20 s)"):
        policy = resolve_policy(cfg.policy)
    domain = domain_for(cfg)
    sandbox = sealed_backend(cfg.sandbox.backend)
    console.print(f"[bold]policy[/] {policy}  [bold]sandbox[/] {sandbox.name}")
    write_run_info(run_dir, RunInfo(command="rollout", domain=cfg.domain, harness=str(repo.working_dir),
                                    policy=str(policy), created=time.strftime("%Y-%m-%dT%H:%M:%S"),
                                    settings=cfg.model_dump(mode="json")))
    tasks_file = write_train_tasks(domain, run_dir / "inputs")
    out_dir = run_dir / "train"
    if out_dir.exists():
        shutil.rmtree(out_dir)  # an interrupted earlier attempt: start the training over
    with progress_bar(console, note=True) as progress:
        bar = progress.add_task(f"GRPO steps ({cfg.domain})", total=cfg.steps, note="")

        def on_step(seen: StepSeen) -> None:
            progress.update(bar, completed=seen.done, note=step_text(seen))
            if not console.is_terminal:
                console.print(f"  {step_text(seen)}", highlight=False)

        trained = train_commit(
            repo=repo, commit=commit, domain=domain, sandbox=sandbox, limits=cfg.sandbox.limits(),
            policy=policy, root_policy=policy, steps=cfg.steps, seed=cfg.seed, work_dir=run_dir / "work",
            out_dir=out_dir, tasks_file=tasks_file, train_timeout=cfg.sandbox.train_timeout_s, tracker=cfg.tracker,
            on_step=on_step,
        )
        progress.update(bar, completed=cfg.steps)
    write_report(trained.report, out_dir)
    return run_dir, trained
