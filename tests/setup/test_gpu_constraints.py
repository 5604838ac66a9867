"""The GPU working set (constraints-gpu.txt, `make setup-gpu`) holds together on paper: every requirement
of meta-agent and of its extras is met by its pins, and its torch is the CPU set's torch. (Installing it
needs an NVIDIA machine; pip's resolver produced it, this test keeps later edits from breaking it.)"""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]


def _pins(name: str) -> dict[str, str]:
    pins = {}
    for line in (ROOT / name).read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            package, version = line.split("==", 1)
            pins[package.strip().lower().replace("_", "-")] = version.strip()
    return pins


def test_every_requirement_of_meta_agent_and_its_extras_is_pinned_within_range() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *(r for extra in project["optional-dependencies"].values() for r in extra)]
    pins = _pins("constraints-gpu.txt")
    problems = []
    for text in wanted:
        req = Requirement(text)
        version = pins.get(req.name.lower().replace("_", "-"))
        if version is None or not req.specifier.contains(version, prereleases=True):
            problems.append(f"{text}: constraints-gpu.txt has {version}")
    assert not problems, problems


def test_the_gpu_set_trains_with_the_same_torch_and_pins_vllm() -> None:
    gpu, cpu = _pins("constraints-gpu.txt"), _pins("constraints.txt")
    assert "vllm" in gpu
    makefile = (ROOT / "Makefile").read_text()
    assert f"torch=={gpu['torch']}" in makefile, "the CPU set installs another torch than the GPU set pins"
    header = "\n".join(line for line in (ROOT / "constraints-gpu.txt").read_text().splitlines() if line.startswith("#"))
    differing = sorted(p for p in set(gpu) & set(cpu) if gpu[p] != cpu[p])
    unexplained = [p for p in differing if p not in header]
    assert not unexplained, f"pins that differ from constraints.txt without a word in the header: {unexplained}"
