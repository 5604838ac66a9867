"""What in a source tree is a test and what is code under test, and where imports resolve from.

The builder mutates only code under test; the evaluator restores test files before it runs
the hidden tests. Both use this one definition, so they can never disagree.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

TEST_DIR_NAMES = frozenset({"tests", "test", "testing"})
PYTEST_CONFIG_FILES = frozenset({"pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", "conftest.py"})
NOT_SOURCE = frozenset({"setup.py", "conftest.py", "versioneer.py", "_version.py", "noxfile.py", "fabfile.py"})
NOT_SOURCE_DIRS = frozenset({"docs", "doc", "examples", "example", "scripts", "tools", "benchmarks", "bench",
                             "build", "dist", ".git", ".tox", ".venv", "venv"})


def is_test_path(rel: str) -> bool:
    """Test modules, conftest files, anything in a tests/ directory, and root-level pytest configuration."""
    path = PurePosixPath(rel)
    name = path.name
    if name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py":
        return True
    if any(part in TEST_DIR_NAMES for part in path.parts[:-1]):
        return True
    return len(path.parts) == 1 and name in PYTEST_CONFIG_FILES


def is_test_module(rel: str) -> bool:
    """A file pytest collects tests from by default (test_*.py or *_test.py), outside docs and build dirs."""
    path = PurePosixPath(rel)
    if path.suffix != ".py" or not (path.name.startswith("test_") or path.name.endswith("_test.py")):
        return False
    return not any(part in NOT_SOURCE_DIRS for part in path.parts[:-1])


def is_source_path(rel: str) -> bool:
    """A .py file that may hold code under test (tests, packaging and docs excluded)."""
    path = PurePosixPath(rel)
    if path.suffix != ".py" or is_test_path(rel) or path.name in NOT_SOURCE:
        return False
    return not any(part in NOT_SOURCE_DIRS or part.endswith(".egg-info") for part in path.parts[:-1])


def python_path(files: list[str]) -> list[str]:
    """sys.path entries (relative) for a tree with these files: src/ first for a src layout, then the root."""
    for rel in files:
        parts = PurePosixPath(rel).parts
        module = len(parts) == 2 and rel.endswith(".py")
        package = len(parts) == 3 and parts[2] == "__init__.py"
        if parts[0] == "src" and (module or package):
            return ["src", "."]
    return ["."]


def list_files(root: Path) -> list[str]:
    """Every regular file under root as a posix relative path, skipping VCS and cache directories."""
    out = []
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if rel.parts[0] == ".git" or "__pycache__" in rel.parts or ".pytest_cache" in rel.parts:
            continue
        if path.is_file() and not path.is_symlink():
            out.append(rel.as_posix())
    return sorted(out)
