"""Big outputs cannot hurt the trusted side: a harness or an agent's analysis code that writes gigabytes
is stopped at its disk quota (and what it wrote is deleted), and a huge harness output is refused while
being read, without the trusted process's memory growing with it."""

from __future__ import annotations

import json
import os
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from meta_agent.agents.python_tool import PYTHON_DISK_MB, run_python, throwaway_session
from meta_agent.contract import MAX_JSONL_BYTES, MAX_RECORD_BYTES, RolloutRecord, read_jsonl
from meta_agent.errors import ContractError
from meta_agent.harness_runner import HarnessError, HarnessRunner
from meta_agent.untrusted_files import MAX_FILE_BYTES, read_bytes
from sandboxes import Limits, Sandbox

T = TypeVar("T")
FLOODING_HARNESS = """\
import sys
out = sys.argv[sys.argv.index("--out") + 1]
with open(out + "/rollouts.jsonl", "wb") as f:
    for _ in range(2048):
        f.write(bytes(1 << 20))
"""
RECORD = RolloutRecord(rollout_id="r0", step=0, task_id="t", group_id="g", prompt="p", completion="c",
                       rewards={"r": 1.0}, reward=1.0, advantage=0.0, prompt_tokens=1, completion_tokens=1,
                       truncated=False, labels=[], harness_commit="x")


def _peak_bytes(read: Callable[[], T]) -> tuple[T | ContractError, int]:
    """What `read` returned (or the ContractError it raised) and the most memory it held at once."""
    tracemalloc.start()
    try:
        try:
            outcome: T | ContractError = read()
        except ContractError as err:
            outcome = err
        return outcome, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture
def sparse_file(tmp_path: Path) -> Iterator[Callable[[str, bytes, int], Path]]:
    """`make(name, head, size)`: a file that starts with `head` and reads as `size` bytes (zeros after the
    head) without taking that much disk."""
    def make(name: str, head: bytes, size: int) -> Path:
        path = tmp_path / name
        with open(path, "wb") as f:
            f.write(head)
            f.truncate(size)
        return path

    yield make


def test_a_harness_writing_2gb_into_its_output_dir_fails_naming_the_quota_and_the_dir(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    work, out = tmp_path / "work", tmp_path / "out"
    (work / "harness").mkdir(parents=True)
    (work / "harness" / "__init__.py").write_text("")
    (work / "harness" / "__main__.py").write_text(FLOODING_HARNESS)
    with HarnessRunner(sandbox, work, commit="flood", writable=[out], limits=Limits(memory_mb=512, disk_mb=50)
                       ) as runner, pytest.raises(HarnessError) as failed:
        runner.train(policy=tmp_path, steps=1, seed=0, out=out, tasks=tmp_path / "tasks.jsonl")
    reason = failed.value.reason
    assert "disk quota" in reason and "50 MiB" in reason and str(out) in reason, reason
    assert "sandbox.disk_mb" in reason  # what to change when a harness legitimately needs more
    assert list(out.iterdir()) == []  # the refused output is not left on the disk


def test_analysis_code_writing_300mb_is_refused_and_leaves_nothing(sandbox: Sandbox) -> None:
    code = "with open('dump.bin', 'wb') as f:\n    for _ in range(300):\n        f.write(bytes(1 << 20))\n"
    with throwaway_session(sandbox, [], memory_mb=512) as session:
        result = run_python(session, code, cwd=session.workdir, env={})
        assert not result.ok
        assert result.text.startswith("refused") and f"{PYTHON_DISK_MB} MiB disk quota" in result.text, result.text
        assert "print what you need" in result.text
        assert list(session.workdir.iterdir()) == []


def test_a_300mb_rollouts_file_is_refused_without_being_read(sparse_file: Callable[[str, bytes, int], Path]
                                                             ) -> None:
    path = sparse_file("rollouts.jsonl", (RECORD.model_dump_json() + "\n").encode(), 300 * 1024**2)
    error, peak = _peak_bytes(lambda: read_jsonl(path, RolloutRecord))
    assert isinstance(error, ContractError)
    assert str(path) in str(error) and f"{MAX_JSONL_BYTES}-byte limit" in str(error)
    assert peak < 1024**2, f"the trusted process held {peak} bytes to refuse it"


def test_an_overlong_line_is_refused_after_reading_no_more_than_the_line_limit(
    sparse_file: Callable[[str, bytes, int], Path]
) -> None:
    # Under the file limit, but its second line is 200 MB long: it must not be read whole to find that out.
    path = sparse_file("rollouts.jsonl", (RECORD.model_dump_json() + "\n").encode(), 200 * 1024**2)
    error, peak = _peak_bytes(lambda: read_jsonl(path, RolloutRecord))
    assert isinstance(error, ContractError)
    assert f"{path}:2:" in str(error) and f"{MAX_RECORD_BYTES} bytes" in str(error)
    assert peak < 4 * MAX_RECORD_BYTES, f"the trusted process held {peak} bytes to refuse it"


def test_more_records_than_the_limit_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "rollouts.jsonl"
    path.write_bytes((RECORD.model_dump_json().encode() + b"\n") * 1001)
    with pytest.raises(ContractError, match=r"rollouts\.jsonl:1001: more than 1000 records, the limit"):
        read_jsonl(path, RolloutRecord, max_records=1000)


def test_records_joined_on_one_line_do_not_slip_past_the_record_count(tmp_path: Path) -> None:
    path = tmp_path / "rollouts.jsonl"
    record = RECORD.model_dump_json()
    path.write_text(record + "\n" + ",".join([record] * 50) + "\n")
    with pytest.raises(ContractError, match=r"rollouts\.jsonl:2: not valid JSON"):
        read_jsonl(path, RolloutRecord)


def test_a_big_valid_file_is_read_whole_and_in_order(tmp_path: Path) -> None:
    path = tmp_path / "rollouts.jsonl"
    records = [RECORD.model_copy(update={"rollout_id": f"r{i}", "completion": "x" * 500}) for i in range(20_000)]
    path.write_text("".join(json.dumps(r.model_dump()) + "\n" for r in records))
    assert os.path.getsize(path) > 2 * 4 * 1024**2  # spans several validation batches
    assert [r.rollout_id for r in read_jsonl(path, RolloutRecord)] == [r.rollout_id for r in records]


def test_no_harness_file_is_read_whole_past_the_file_limit(sparse_file: Callable[[str, bytes, int], Path]) -> None:
    path = sparse_file("report.json", b"{", 300 * 1024**2)
    error, peak = _peak_bytes(lambda: read_bytes(path))
    assert isinstance(error, ContractError) and f"{MAX_FILE_BYTES}-byte limit" in str(error)
    assert peak < 1024**2
