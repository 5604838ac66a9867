"""The built-in domains' settings models, in a module light enough for the config to import
(pydantic only: building the config must not import torch, reasoning-gym or the SWE builder)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from meta_agent.serving import EvaluatorSettings
from meta_agent.swe.defaults import DEFAULT_TASKSET
from meta_agent.swe.difficulty import TIERS, Tier


class MathSettings(BaseModel):
    train_size: int = Field(256, ge=1, description="training tasks written into the harness sandbox")
    selection_size: int = Field(100, ge=1, description="sealed tasks for backtests and promotion decisions")
    test_size: int = Field(100, ge=1, description="sealed tasks evaluated once at the end of a run")
    eval_max_new_tokens: int = Field(48, ge=1, description="greedy tokens per evaluation answer")
    eval_batch_size: int = Field(64, ge=1, description=(
        "prompts the evaluator decodes together (greedy_decode.packed_greedy: no padded prefill, ended "
        "answers leave the batch); 64 answered as 16 did, 3.7x as fast on an H200 and faster on a 2-core CPU "
        "(bench/eval_throughput.py)"))
    sealed_levels: dict[int, float] | None = Field(None, description=(
        "share of each difficulty level (1-4) in the selection and test splits, e.g. {1: 0.4, 2: 0.4, 3: 0.2} "
        "to leave out a level every arm scores 0 on; default: the train split's mix (35/30/25/10%). A level "
        "with too few distinct questions left after the earlier splits gives fewer; the last level makes up "
        "the count"))
    evaluator: EvaluatorSettings = EvaluatorSettings()

    @field_validator("sealed_levels")
    @classmethod
    def _levels_exist(cls, mix: dict[int, float] | None) -> dict[int, float] | None:
        if mix is None:
            return None
        unknown = sorted(set(mix) - {1, 2, 3, 4})
        if unknown:
            raise ValueError(f"sealed_levels: no difficulty level {unknown[0]} (the math tasks have levels 1-4)")
        if any(not (share >= 0 and share < float("inf")) for share in mix.values()):
            raise ValueError("sealed_levels: each share is a finite number of at least 0")
        if sum(mix.values()) <= 0:
            raise ValueError("sealed_levels: at least one level needs a share above 0")
        return mix


SourceName = Literal["humaneval", "codeio"]


def known_backend(name: str | None) -> str | None:
    """A domain's own sandbox choice names a backend that exists (a typo used to surface at the first test run)."""
    from sandboxes import BACKENDS

    if name is not None and name != "auto" and not BACKENDS.valid(name):
        raise ValueError(f"unknown sandbox backend {name!r}; available: auto | {BACKENDS.describe()}")
    return name


class CodeSettings(BaseModel):
    sources: list[SourceName] = Field(default_factory=lambda: list[SourceName](["humaneval", "codeio"]),
                                      description="built-in problem sources")
    codeio_problems: int = Field(100, ge=0, description="CodeI/O problems to build (tests generated in the sandbox)")
    import_files: list[Path] = Field(
        default_factory=list, description="JSONL files in MBPP/APPS/CodeContests/LiveCodeBench/generic shape")
    visible_tests: int = Field(1, ge=0, description="visible tests of an imported problem without public tests")
    train_size: int = Field(256, ge=1, description="max training tasks written into the harness sandbox")
    selection_size: int = Field(60, ge=1, description="max sealed tasks for backtests and promotion decisions")
    test_size: int = Field(100, ge=1, description="max sealed tasks evaluated once at the end of a run")
    sandbox: str | None = Field(None, description="backend the sealed verifier runs programs in (process = no "
                                                  "isolation); default: the run's sandbox.backend")
    test_timeout_s: float = Field(5.0, gt=0, description="wall-time limit of one test")
    memory_mb: int = Field(1024, ge=64, description="address-space limit of one test")
    workers: int = Field(2, ge=1, description="tests run in parallel inside the sandbox")
    eval_max_new_tokens: int = Field(384, ge=1, description="greedy tokens per evaluation answer")
    eval_batch_size: int = Field(8, ge=1)
    pass_k: list[int] = Field(default_factory=list, description="also report pass@k for these k (sampling)")
    pass_k_samples: int = Field(10, ge=1, description="samples per task for pass@k (n >= every k)")
    pass_k_temperature: float = Field(0.8, gt=0)
    evaluator: EvaluatorSettings = Field(EvaluatorSettings(), description=(
        "how the sealed evaluator generates its greedy answers (pass@k samples stay on transformers)"))

    @field_validator("sandbox")
    @classmethod
    def _known_backend(cls, name: str | None) -> str | None:
        return known_backend(name)


class ScaffoldSettings(BaseModel):
    """The sealed SWE evaluator's fixed scaffold (the same for every policy it scores). The defaults leave
    room for a scripted agent that knows the fix to resolve every test instance (tests/swe_domain/
    test_protocol.py): it sends 4 commands of at most 91 tokens, with 2 turns to spare for exploring."""

    max_turns: int = Field(6, ge=1, description="assistant turns per episode")
    turn_tokens: int = Field(128, ge=1, description="greedy tokens per assistant turn")
    observation_chars: int = Field(600, ge=50, description="command output shown to the policy")
    command_timeout_s: float = Field(10, gt=0)


class SweSettings(BaseModel):
    taskset: str = Field(DEFAULT_TASKSET, description="task set in the cache (`meta-agent tasks list`)")
    train_size: int | None = Field(48, ge=1, description="train instances handed to the harness (None = all)")
    selection_size: int | None = Field(8, ge=1, description="sealed instances per selection evaluation")
    test_size: int | None = Field(8, ge=1, description="sealed instances in the final test evaluation")
    sandbox: str | None = Field(None, description="backend for policy commands and test runs of the evaluator; "
                                                  "default: the run's sandbox.backend")
    tiers: list[Tier] = Field(
        default_factory=lambda: list[Tier](TIERS), min_length=1,
        description="difficulty tiers to draw instances from (easy | medium | hard; `meta-agent tasks list` "
                    "counts them). Instances without a tier (imported, or built before tiers) are used only "
                    "when all three are chosen")
    scaffold: ScaffoldSettings = Field(ScaffoldSettings(), description=(
        "the sealed evaluator's episode: turns, tokens per turn, observation size (docs/swe-tasks.md, 'The "
        "sealed protocol'); every arm is scored under the same one, and changing it changes every SWE number"))

    @field_validator("sandbox")
    @classmethod
    def _known_backend(cls, name: str | None) -> str | None:
        return known_backend(name)
