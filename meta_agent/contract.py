"""Schemas of every file that crosses the harness boundary, and their validating readers.

The harness is untrusted: whatever it writes is parsed here before meta-agent uses
it, and anything invalid becomes a `ContractError` naming the file, line and field,
so a broken candidate fails with a reason instead of crashing the loop.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from meta_agent.errors import ContractError as ContractError
from meta_agent.fsutil import atomic_write_lines
from meta_agent.untrusted_files import read_bytes, read_lines

SCHEMA_VERSION = 1
MAX_RECORD_BYTES = 2_000_000
"""A single JSONL line above this size is rejected (a harness cannot flood meta-agent's memory)."""
MAX_JSONL_BYTES = 256 * 1024**2
"""A JSONL file above this size is refused before it is read: its records take about twice that in memory
(measured: 250 MiB of rollouts, a 0.5 GiB peak)."""
MAX_RECORDS = 200_000
"""Records in one JSONL file (a long run's rollouts stay far below): each costs ~2.5 KB in memory, however short."""
BATCH_BYTES = 4 * 1024**2
"""Lines validated in one call: about as fast as the whole file at once, without holding all of its bytes."""

Label = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")]
Finite = Annotated[float, Field(allow_inf_nan=False)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class Task(_Strict):
    """One task of a split. Meta-agent writes only the *train* split into the harness sandbox."""

    id: str
    prompt: str
    answer: str = ""
    difficulty: int = 0
    source: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)


class RolloutRecord(_Strict):
    """One completion (one multi-turn episode for agentic domains), as written by `harness train`."""

    schema_version: Literal[1] = 1
    rollout_id: str
    step: int = Field(ge=0)
    task_id: str
    group_id: str
    prompt: str
    completion: str
    rewards: dict[str, Finite]
    """Each reward component's value before weighting."""
    reward: Finite
    """Weighted total the policy was trained on."""
    advantage: Finite
    weight: Finite = Field(1.0, ge=0)
    """Filter weight: 0 = dropped from the loss."""
    prompt_tokens: int = Field(ge=0)
    completion_tokens: int = Field(ge=0)
    truncated: bool
    labels: list[Label]
    harness_commit: str
    verified: bool | None = None
    """The sealed verifier's verdict; filled in by meta-agent, never by the harness."""
    extra: dict[str, Any] = Field(default_factory=dict)


class MetricsRecord(_Strict):
    """One optimizer step of `harness train`. None = not available for these settings (e.g. KL at beta=0)."""

    step: int = Field(ge=0)
    reward_mean: Finite | None
    reward_std: Finite | None
    kl: Finite | None
    entropy: Finite | None
    completion_length_mean: Finite | None
    truncation_rate: Finite | None
    zero_variance_frac: Finite | None
    clip_ratio: Finite | None
    kept_frac: Finite | None
    loss: Finite | None
    learning_rate: Finite | None
    wall_time: Finite = Field(ge=0)


class CheckpointManifest(_Strict):
    """`checkpoint/manifest.json`: what `harness train` produced and how to load it."""

    schema_version: Literal[1] = 1
    format: Literal["lora", "full"]
    base_model: str
    parent: str
    steps: int = Field(ge=0)
    seed: int
    harness_commit: str


class TrainSummary(_Strict):
    steps: int = Field(ge=0)
    seed: int
    wall_time: Finite = Field(ge=0)
    harness_commit: str


class ReplayRecord(_Strict):
    """One rollout re-scored by a (possibly different) harness version, written by `harness replay`."""

    rollout_id: str
    rewards: dict[str, Finite]
    reward: Finite
    advantage: Finite
    weight: Finite = Field(1.0, ge=0)
    labels: list[Label]


class DiagnoseRecord(_Strict):
    rollout_id: str
    labels: list[Label]


M = TypeVar("M", bound=BaseModel)


def _field_errors(err: ValidationError) -> str:
    parts = []
    for e in err.errors()[:3]:
        loc = ".".join(str(p) for p in e["loc"]) or "<record>"
        parts.append(f"field {loc}: {e['msg']}")
    return "; ".join(parts)


@functools.cache
def _list_adapter(model: type[BaseModel]) -> TypeAdapter[list[Any]]:
    return TypeAdapter(list[model])  # type: ignore[valid-type]


def read_jsonl(path: Path, model: type[M], *, max_bytes: int = MAX_JSONL_BYTES,
               max_records: int = MAX_RECORDS) -> list[M]:
    """Parse and validate a JSONL file, streamed; the first bad line raises ContractError(file:line: field ...),
    and so does a file over `max_bytes` or `max_records` (naming the limit)."""
    if not os.path.lexists(path):
        partial = path.with_name(path.name + ".partial")
        hint = " (only a .partial file exists: the harness did not finish)" if partial.exists() else ""
        raise ContractError(f"{path}: missing{hint}")
    records: list[M] = []
    batch: list[tuple[int, bytes]] = []
    size = count = 0
    for lineno, raw in read_lines(path, max_bytes=max_bytes, max_line_bytes=MAX_RECORD_BYTES):
        if not raw.strip():
            continue
        count += 1
        if count > max_records:
            raise ContractError(f"{path}:{lineno}: more than {max_records} records, the limit for one file; "
                                "the harness must write fewer")
        batch.append((lineno, raw))
        size += len(raw)
        if size >= BATCH_BYTES:
            records += _validate(path, model, batch)
            batch, size = [], 0
    return records + _validate(path, model, batch)


def _validate(path: Path, model: type[M], batch: list[tuple[int, bytes]]) -> list[M]:
    """The batch's records, one per line; else ContractError naming the first bad line."""
    if not batch:
        return []
    try:
        # One validation call for the batch (3x faster); the slow path below only names the bad line.
        parsed = list(_list_adapter(model).validate_json(b"[" + b",".join(raw for _, raw in batch) + b"]"))
        if len(parsed) == len(batch):  # else a line held several records joined by commas
            return parsed
    except ValidationError:
        pass
    for lineno, raw in batch:
        try:
            model.model_validate_json(raw)
        except ValidationError as e:
            if e.errors()[0]["type"] == "json_invalid":
                raise ContractError(f"{path}:{lineno}: not valid JSON ({e.errors()[0]['msg']})") from e
            raise ContractError(f"{path}:{lineno}: {_field_errors(e)}") from e
    raise ContractError(f"{path}: not valid JSON Lines (a record spans lines or lines are joined)")


def read_json(path: Path, model: type[M]) -> M:
    try:
        return model.model_validate_json(read_bytes(path, MAX_RECORD_BYTES * 5))
    except ValidationError as e:
        raise ContractError(f"{path}: {_field_errors(e)}") from e


def write_jsonl(path: Path, records: Iterable[BaseModel]) -> int:
    """Atomic write (temp file, fsync, rename): a crash never leaves a partial file that looks complete."""
    return atomic_write_lines(path, (r.model_dump_json() for r in records))
