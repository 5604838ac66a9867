"""Code that runs *inside* a sandbox session, in one place and loaded one way.

The trusted side never imports these files as modules of its own process: each is shipped into a session
as text (`source(NAME)`, run as `python -c SOURCE ...`) or copied next to what uses it (`path(NAME)`).
Each uses the standard library only (plus what the session's own environment has: mini-swe-agent for
`mini_driver.py`, pytest for `pytest_runner.py`), so it runs under any interpreter a sandbox offers.

- `coder_sandbox.py`: the LLM coder's file operations in a candidate's workspace (`agents/coder_tools.py`);
- `sandbox_launch.py`: starts an external coding agent in the session, behind the relay
  (`agents/external/coder.py`);
- `mini_driver.py`: mini-swe-agent driven inside the session (`agents/external/agents.py`);
- `skillkit.py`: the helpers a skill's `apply.py` imports (`skills/runner.py`);
- `pytest_runner.py`: the pytest plugin that writes one outcome per test of an SWE task (`swe/testrun.py`).

Two more run inside sandboxes but live beside the code they belong to: `code_tasks/runner.py` and
`child.py` (the sealed code verifier's; their bytes are part of the code task cache's version) and
`sandboxes/sandbox_init.py` (the sandbox's own init; `sandboxes` imports nothing of meta_agent).
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent


def path(name: str) -> Path:
    """The file `name` of this package (e.g. `skillkit.py`), to copy into a session."""
    found = HERE / name
    if found.parent != HERE or found.suffix != ".py" or not found.is_file():
        raise FileNotFoundError(f"no sandbox-side script {name!r} in {HERE}")
    return found


def source(name: str) -> str:
    """The text of the file `name`, to run as `python -c SOURCE ...` in a session."""
    return path(name).read_text(encoding="utf-8")
