"""The sealed evaluator behind an OpenAI-compatible server (`evaluator.generation: vllm`). vLLM needs a
CUDA GPU, so on a machine without one the default launch is refused before anything runs, naming what
is missing; the serving path itself (checkpoint merged and written, server started, health polled,
completions in flight together, server stopped) runs against `model_server.py` through
`evaluator.server_command`, and must score exactly as in-process generation does."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

from meta_agent.domains.math import MathDomain
from meta_agent.domains.settings import MathSettings
from meta_agent.serving import EvaluatorSettings, ServingError, serving_problem
from sandboxes.gpu import has_gpu
from tests.evolve.conftest import meta_agent, tiny_config

SERVER = [sys.executable, str(Path(__file__).with_name("model_server.py"))]


def _math(evaluator: EvaluatorSettings | None = None) -> MathDomain:
    # batch 1: in-process greedy decodes each task alone, as a server does (no padding to differ by)
    return MathDomain(MathSettings(train_size=8, selection_size=5, test_size=4, eval_max_new_tokens=8,
                                   eval_batch_size=1, evaluator=evaluator or EvaluatorSettings()))


def test_served_evaluation_scores_exactly_as_in_process_generation(tiny_policy: Path, tmp_path: Path) -> None:
    whole = _math().evaluate(tiny_policy, "selection", root=tiny_policy)
    served = _math(EvaluatorSettings(generation="vllm", server_command=SERVER, concurrency=3)).evaluate(
        tiny_policy, "selection", root=tiny_policy)
    assert [r.completion for r in served.results] == [r.completion for r in whole.results]
    assert served.score == whole.score
    leftovers = [p for p in Path(os.environ.get("TMPDIR", "/tmp")).glob("meta-agent-serve-*")]
    assert not leftovers, f"the merged checkpoint was left behind: {leftovers}"


def test_a_server_that_dies_at_start_is_one_error_with_its_log(tiny_policy: Path) -> None:
    domain = _math(EvaluatorSettings(generation="vllm", server_command=[*SERVER, "--fail-after-start"]))
    with pytest.raises(ServingError, match=r"(?s)exited with code 3.*failing on purpose"):
        domain.evaluate(tiny_policy, "selection", root=tiny_policy)


def test_a_server_that_never_answers_times_out_and_is_stopped(tiny_policy: Path) -> None:
    domain = _math(EvaluatorSettings(generation="vllm", server_command=[*SERVER, "--never-ready"],
                                     startup_timeout_s=3))
    with pytest.raises(ServingError, match=r"did not answer /health within 3 s"):
        domain.evaluate(tiny_policy, "selection", root=tiny_policy)
    assert not _running("--never-ready"), "the server that never answered was left running"


def _running(marker: str) -> list[str]:
    """Command lines of live (not zombie) processes running model_server.py with `marker`, from /proc."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            text = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (proc / "stat").read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            continue  # gone meanwhile
        if "model_server.py" in text and marker in text and state != "Z":
            found.append(text)
    return found


def test_the_default_launch_names_what_this_machine_lacks() -> None:
    vllm = EvaluatorSettings(generation="vllm")
    assert serving_problem(vllm, cuda=True, vllm=True) is None
    text = serving_problem(vllm, cuda=False, vllm=False)
    assert text is not None and "a CUDA GPU and vLLM (make setup-gpu)" in text
    assert "evaluator.generation: transformers" in text
    assert serving_problem(EvaluatorSettings(), cuda=False, vllm=False) is None
    assert serving_problem(vllm.model_copy(update={"server_command": SERVER}), cuda=False, vllm=False) is None


@pytest.mark.skipif(has_gpu(), reason="this machine has a GPU: the default vLLM launch is not refused here")
def test_evolve_with_a_vllm_evaluator_on_a_cpu_machine_stops_before_anything_runs(tmp_path: Path) -> None:
    run = tmp_path / "run"
    config = tiny_config(run, math={"train_size": 24, "selection_size": 6, "test_size": 6,
                                    "evaluator": {"generation": "vllm"}})
    res = meta_agent("evolve", "--config", str(config), data_dir=tmp_path / "data", timeout=300)
    text = res.stdout + res.stderr
    assert res.returncode != 0 and "evaluator.generation is vllm, which needs a CUDA GPU" in text, text[-2000:]
    assert "Traceback" not in text and not (run / "events.jsonl").exists()


@pytest.mark.skipif(not has_gpu() or importlib.util.find_spec("vllm") is None,
                    reason="needs a CUDA GPU and vLLM (make setup-gpu); this machine lacks one of them")
def test_a_real_vllm_server_evaluates_a_policy(tiny_policy: Path) -> None:
    served = _math(EvaluatorSettings(generation="vllm", gpu_memory_utilization=0.3)).evaluate(
        tiny_policy, "selection", root=tiny_policy)
    assert len(served.results) == 5 and served.score.n == 5
