"""`tasks export` (instances without private fields, SWE-bench predictions) and `tasks verify` (plain pytest)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from typer.testing import CliRunner

from meta_agent.commands.tasks import app
from meta_agent.domains.base import EvalResult, TaskResult
from meta_agent.stats import bootstrap_ci
from meta_agent.swe.instance import SweInstance
from meta_agent.swe.splits import with_splits
from meta_agent.swe.taskset import save_taskset

SANDBOX = os.environ.get("META_AGENT_TEST_SANDBOX", "bwrap")


def test_export_leaves_out_the_bug_location_unless_asked(
    calc_instances: list[SweInstance], swe_cache: Path, tmp_path: Path
) -> None:
    save_taskset("calc-export", with_splits(calc_instances), origin="tests")
    runner = CliRunner()
    public, private = tmp_path / "public.jsonl", tmp_path / "private.jsonl"
    assert runner.invoke(app, ["export", "--taskset", "calc-export", "--out", str(public)]).exit_code == 0
    assert runner.invoke(app, ["export", "--taskset", "calc-export", "--out", str(private),
                               "--with-private"]).exit_code == 0
    rows = [json.loads(line) for line in public.read_text().splitlines()]
    assert len(rows) == len(calc_instances)
    assert all("mutation" not in r and r["FAIL_TO_PASS"] and r["patch"] for r in rows)
    assert all(json.loads(line)["mutation"]["file"] == "calc.py" for line in private.read_text().splitlines())
    only_test = runner.invoke(app, ["export", "--taskset", "calc-export", "--split", "test", "--out",
                                    str(tmp_path / "t.jsonl")])
    assert only_test.exit_code == 0 and all(json.loads(line)["split"] == "test"
                                            for line in (tmp_path / "t.jsonl").read_text().splitlines())


def test_predictions_come_from_an_evaluation(calc_instances: list[SweInstance], tmp_path: Path) -> None:
    results = [TaskResult(task_id=i.instance_id, correct=True, score=1.0, answer=i.patch) for i in calc_instances[:2]]
    evaluation = EvalResult(domain="swe", split="test", policy="runs/x/policy", score=bootstrap_ci([1.0, 1.0]),
                            results=results, wall_time=1.0)
    (tmp_path / "eval.json").write_text(evaluation.model_dump_json())
    out = tmp_path / "preds.jsonl"
    made = CliRunner().invoke(app, ["export", "--predictions", str(tmp_path / "eval.json"), "--out", str(out),
                                    "--model-name", "smollm2-evolved"])
    assert made.exit_code == 0, made.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows == [{"instance_id": i.instance_id, "model_name_or_path": "smollm2-evolved", "model_patch": i.patch}
                    for i in calc_instances[:2]]
    math = evaluation.model_copy(update={"domain": "math"})
    (tmp_path / "math.json").write_text(math.model_dump_json())
    refused = CliRunner().invoke(app, ["export", "--predictions", str(tmp_path / "math.json"), "--out", str(out)])
    assert refused.exit_code == 1 and "SWE evaluations" in refused.output


def test_verify_agrees_with_plain_pytest_and_names_a_wrong_list(
    calc_instances: list[SweInstance], swe_cache: Path
) -> None:
    runner = CliRunner()
    save_taskset("calc-verify", with_splits(calc_instances), origin="tests")
    ok = runner.invoke(app, ["verify", "--taskset", "calc-verify", "--sample", "3", "--sandbox", SANDBOX,
                             "--no-progress"])
    assert ok.exit_code == 0, ok.output
    said = " ".join(ok.output.split())
    assert "3 of 8 instances checked" in said and "0 disagreements" in said
    assert all(inst.graded_as == "unprivileged" for inst in calc_instances), "built here: found as the sandbox uid"
    assert "an unprivileged user, as every checked instance's lists were found" in said, said

    wrong = calc_instances[0]
    moved = wrong.FAIL_TO_PASS[0]
    # ... and, like a SWE-bench row, does not say who its lists were found as
    tampered = wrong.model_copy(update={"PASS_TO_PASS": [*wrong.PASS_TO_PASS, moved], "graded_as": None})
    save_taskset("calc-wrong", with_splits([tampered]), origin="tests")
    bad = runner.invoke(app, ["verify", "--taskset", "calc-wrong", "--sandbox", SANDBOX, "--no-progress"])
    assert bad.exit_code == 1
    said = " ".join(bad.output.split())
    assert "1 disagreements" in said and wrong.instance_id in said and f"PASS_TO_PASS {moved} is failed" in said
    assert "1 of these instances were found as root or do not say" in said, said
