"""`make demo` installs meta-agent without its extras (`.venv/.core`), and the harness it evolves runs on that
interpreter: every third-party module the harness template imports (its code and its own tests, which its
selftest runs with pytest) must come with meta-agent's core requirements, not with an extra.

A first `make demo` on a fresh machine rejected every candidate at its static checks with "No module named
pytest": pytest was in the `dev` extra, and every earlier demo had run in a checkout with the suite installed.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "harness_repo"


def _core_closure() -> set[str]:
    """meta-agent's core requirements and everything they require in turn (no extras)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    todo = [Requirement(r).name for r in project["dependencies"]]
    seen: set[str] = set()
    while todo:
        name = canonicalize_name(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        for text in requires:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return seen


def _module_level_imports(path: Path) -> set[str]:
    """Top-level module names a file imports when it is loaded (not inside functions or TYPE_CHECKING)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_what_the_harness_template_imports_comes_with_the_core_install() -> None:
    local = {p.name for p in TEMPLATE.iterdir() if p.is_dir()} | {p.stem for p in TEMPLATE.glob("*.py")}
    imported = set().union(*(_module_level_imports(p) for p in TEMPLATE.rglob("*.py")))
    third_party = sorted(imported - set(sys.stdlib_module_names) - local - {"__future__"})
    assert "pytest" in third_party and "yaml" in third_party  # the scan sees the template's tests and code
    providers = metadata.packages_distributions()
    core = _core_closure()
    missing = [f"{module} ({', '.join(providers.get(module, ['not installed']))})" for module in third_party
               if not any(canonicalize_name(d) in core for d in providers.get(module, []))]
    assert not missing, f"the harness imports these, which only an extra of meta-agent installs: {missing}"


def test_the_harness_selftest_runs_under_the_core_install() -> None:
    """`python -m harness selftest` is `python -m pytest`, in a subprocess: no import shows it."""
    main = (TEMPLATE / "harness" / "__main__.py").read_text()
    assert '"-m", "pytest"' in main
    assert "pytest" in _core_closure()
