"""NVIDIA GPUs inside a sandbox, when a session asks for them (`Limits.gpus`) and the host has them.

bwrap gives a session a minimal /dev of its own; the GPU's device nodes (/dev/nvidia0..N,
nvidiactl, nvidia-uvm, the MIG capability nodes) are bound into it. The driver's user-space
libraries need no bind: they live under /usr, which every session sees read-only. Docker asks
the engine for every GPU (`device_requests`, the NVIDIA container toolkit), as `--gpus all` does.
Nothing else opens: no network, no other device.
"""

from __future__ import annotations

import glob
import resource
import stat
from pathlib import Path

DEVICE_GLOBS = ("/dev/nvidia[0-9]*", "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
                "/dev/nvidia-modeset", "/dev/nvidia-caps/nvidia-cap[0-9]*")


def nvidia_devices(globs: tuple[str, ...] = DEVICE_GLOBS) -> list[Path]:
    """The host's NVIDIA character devices (empty on a machine without an NVIDIA driver)."""
    found: set[Path] = set()
    for pattern in globs:
        for name in glob.glob(pattern):
            try:
                if stat.S_ISCHR(Path(name).stat().st_mode):
                    found.add(Path(name))
            except OSError:
                continue
    return sorted(found)


def bwrap_gpu_args(devices: list[Path]) -> list[str]:
    """`--dev-bind` of each device node at the same path (after `--dev /dev`, which they sit in)."""
    args: list[str] = []
    for device in devices:
        args += ["--dev-bind", str(device), str(device)]
    return args


def gpu_nodes() -> list[Path]:
    """One node per GPU (`/dev/nvidia0`, `/dev/nvidia1`, ...), without the control and UVM nodes."""
    return [d for d in nvidia_devices() if d.name.startswith("nvidia") and d.name[6:].isdigit()]


def has_gpu() -> bool:
    return bool(gpu_nodes())


def memory_rlimit(gpus: bool) -> int:
    """The rlimit that bounds a session's memory where no memory cgroup can: RLIMIT_AS, or RLIMIT_DATA
    for a session that asked for GPUs.

    CUDA maps far more address space than memory when it starts (its unified address range), so under
    RLIMIT_AS `cudaGetDeviceCount` fails with "out of memory" and torch sees no GPU (found on an H200
    machine without cgroups, 8 GB limit). RLIMIT_DATA counts private writable mappings, which is where
    heaps, Python objects and CPU tensors live, and not CUDA's inaccessible reservations or the driver's
    shared device mappings; GPU memory itself is the card's, bounded by the card.
    """
    return resource.RLIMIT_DATA if gpus else resource.RLIMIT_AS
