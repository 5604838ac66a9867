"""Executor settings as a user gives them: options over a --config file, a resume that moves the run."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from meta_agent.cli import executor_options
from meta_agent.config import EvolveConfig, build
from meta_agent.execution.local import gpu_count
from meta_agent.execution.settings import ExecutorSettings
from meta_agent.runinfo import RunInfo, write_run_info


def test_options_overlay_the_config_files_executor_section() -> None:
    from_file = {"executor": {"kind": "ray", "retries": 4, "gpus_per_task": 1}}
    cfg = build(EvolveConfig, from_file, {"executor": executor_options(None, 3, None)})
    assert cfg.executor == ExecutorSettings(kind="ray", retries=4, gpus_per_task=1, parallel=3)
    assert build(EvolveConfig, {}, {"executor": executor_options("local", None, None)}).executor.kind == "local"
    assert build(EvolveConfig, from_file, {"executor": executor_options(None, None, None)}).executor.retries == 4


@pytest.mark.parametrize("bad", [{"kind": "slurm"}, {"parallel": 0}, {"retries": -1}, {"cpus_per_task": 0},
                                 {"unknown": 1}])
def test_bad_executor_settings_are_refused_with_the_field(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError) as e:
        ExecutorSettings.model_validate(bad)
    assert next(iter(bad)) in str(e.value)


def test_resume_can_move_a_run_to_ray_keeping_its_other_executor_settings(tmp_path: Path) -> None:
    from meta_agent.evolve import load_for_resume

    cfg = EvolveConfig(executor=ExecutorSettings(retries=5, cpus_per_task=2))
    write_run_info(tmp_path, RunInfo(command="evolve", domain="math", harness=str(tmp_path / "h"), policy="tiny",
                                     created="now", settings=cfg.model_dump(mode="json")))
    resumed = load_for_resume(tmp_path, {"budget": {}, "executor": {"kind": "ray", "ray_address": "auto"}})
    assert resumed.executor == ExecutorSettings(kind="ray", ray_address="auto", retries=5, cpus_per_task=2)


def test_visible_devices_decide_how_many_gpus_the_workers_share(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,5")
    assert gpu_count() == 2
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert gpu_count() == 0


def test_sharding_a_code_evaluation_that_reports_pass_at_k_is_refused_naming_both_settings() -> None:
    with pytest.raises(ValidationError, match=r"eval_shards 2 with code.pass_k \[5\]"):
        EvolveConfig.model_validate({"domain": "code", "code": {"pass_k": [5]}, "executor": {"eval_shards": 2}})
    assert EvolveConfig.model_validate({"domain": "code", "executor": {"eval_shards": 2}}).executor.eval_shards == 2


def test_a_resumed_run_keeps_its_step_count_when_the_domain_default_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The defaults a run started with are saved with it; a later release's defaults never reach it."""
    import dataclasses

    from meta_agent import domains
    from meta_agent.evolve import load_for_resume

    cfg = EvolveConfig.model_validate({"domain": "math"})
    assert cfg.train_steps == domains.BUILTIN["math"].default_train_steps
    write_run_info(tmp_path, RunInfo(command="evolve", domain="math", harness=str(tmp_path / "h"), policy="tiny",
                                     created="now", settings=cfg.model_dump(mode="json")))
    changed = dataclasses.replace(domains.BUILTIN["math"], default_train_steps=99, default_selection_limit=7)
    monkeypatch.setitem(domains.BUILTIN, "math", changed)
    resumed = load_for_resume(tmp_path, {})
    assert resumed.steps == cfg.steps != 99 and resumed.selection_limit == cfg.selection_limit != 7
    assert EvolveConfig.model_validate({"domain": "math"}).steps == 99, "a new run takes the new default"


def test_one_sandbox_setting_reaches_every_domains_sandboxed_work() -> None:
    """`--sandbox bwrap` used to set only the harness's backend: the code verifier and the SWE episodes kept
    their own "auto" (docker wherever an engine answered)."""
    cfg = EvolveConfig.model_validate({"domain": "swe", "sandbox": {"backend": "bwrap"}})
    assert cfg.swe.sandbox == "bwrap" and cfg.code.sandbox == "bwrap"
    own = EvolveConfig.model_validate({"domain": "code", "sandbox": {"backend": "bwrap"},
                                       "code": {"sandbox": "process"}})
    assert own.code.sandbox == "process", "a domain that names its own backend keeps it"
    resumed = EvolveConfig.model_validate(cfg.model_dump(mode="json"))
    assert resumed.swe.sandbox == "bwrap", "saved with the run as resolved"
    with pytest.raises(ValidationError, match="unknown sandbox backend 'dokcer'"):
        EvolveConfig.model_validate({"domain": "swe", "swe": {"sandbox": "dokcer"}})
