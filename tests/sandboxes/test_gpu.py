"""GPUs inside sandboxes: device nodes bound by bwrap, requested from Docker, only when asked for.

The tests that need an NVIDIA GPU run where there is one and are reported as skipped, with the
reason, everywhere else (`make test` prints skip reasons)."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from sandboxes.base import Limits, Sandbox
from sandboxes.bwrap import BwrapSandbox
from sandboxes.gpu import bwrap_gpu_args, has_gpu, nvidia_devices
from tests.sandboxes.conftest import TEST_LIMITS

NO_GPU = "no NVIDIA GPU on this machine: the GPU pass-through was not run"
CUDA = "import torch; print(torch.cuda.is_available())"


def test_only_character_devices_count_as_gpu_nodes(tmp_path: Path) -> None:
    (tmp_path / "nvidia0").write_text("a regular file named like a device")
    assert nvidia_devices((str(tmp_path / "nvidia*"), "/dev/null")) == [Path("/dev/null")]


def test_bwrap_binds_each_device_node_at_its_own_path() -> None:
    assert bwrap_gpu_args([Path("/dev/nvidia0"), Path("/dev/nvidiactl")]) == [
        "--dev-bind", "/dev/nvidia0", "/dev/nvidia0", "--dev-bind", "/dev/nvidiactl", "/dev/nvidiactl"]


def test_a_session_sees_gpu_devices_only_when_it_asks_and_the_host_has_them(workdir: Path) -> None:
    for asked in (False, True):
        with BwrapSandbox().open(workdir, limits=replace(TEST_LIMITS, gpus=asked)) as s:
            result = s.run(["sh", "-c", "ls /dev"])
        assert result.ok, result.describe_failure()
        assert ("nvidia0" in result.stdout.split()) == (asked and has_gpu()), result.stdout


@pytest.mark.skipif(not has_gpu(), reason=NO_GPU)
def test_cuda_works_inside_a_gpu_session_and_not_in_a_cpu_one(backend: Sandbox, workdir: Path) -> None:
    limits = replace(TEST_LIMITS, memory_mb=8000, pids=512)
    for asked in (True, False):
        with backend.open(workdir, limits=replace(limits, gpus=asked)) as s:
            result = s.run([sys.executable, "-c", CUDA], timeout=300)
        assert result.ok, result.describe_failure()
        assert result.stdout.strip() == str(asked)


# 4 GB of address space, PROT_NONE (prot=0): what CUDA reserves at start-up, none of it memory.
RESERVE = "import mmap; m = mmap.mmap(-1, 4 * 1024 ** 3, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, prot=0)"


@pytest.mark.parametrize("backend_name", ["bwrap", "process"])
def test_without_cgroups_a_gpu_session_can_reserve_address_space_but_not_use_more_memory(
    workdir: Path, backend_name: str
) -> None:
    """CUDA reserves far more address space than the memory limit when it starts: under RLIMIT_AS torch saw
    no GPU in a sandbox on an H200 ("Error 2: out of memory"). A GPU session is bounded by RLIMIT_DATA."""
    from sandboxes.process import ProcessSandbox

    sandbox: Sandbox = BwrapSandbox(use_cgroups=False) if backend_name == "bwrap" else ProcessSandbox()
    for gpus in (True, False):
        with sandbox.open(workdir, limits=Limits(memory_mb=512, gpus=gpus)) as s:
            reserved = s.run([sys.executable, "-c", RESERVE])
            filled = s.run([sys.executable, "-c", "blob = b'x' * (1024 ** 3)"])
        assert reserved.ok == gpus, reserved.describe_failure()
        assert gpus or "Cannot allocate memory" in reserved.stderr, reserved.stderr
        assert not filled.ok and "MemoryError" in filled.stderr, filled.describe_failure()
