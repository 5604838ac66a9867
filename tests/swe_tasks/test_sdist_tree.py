"""An sdist becomes a task repository with what the project needs at run time, and no build junk."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from meta_agent.swe.project import ProjectRepo

SELF_AWARE = {
    # semantic_version 2.10 does this at import: its version from its own metadata, else pkg_resources
    "demo/__init__.py": "from importlib.metadata import version\n\n__version__ = version('demo')\n",
    "demo.egg-info/PKG-INFO": "Metadata-Version: 2.1\nName: demo\nVersion: 1.2.3\n",
    "demo.egg-info/SOURCES.txt": "demo/__init__.py\n",
    "tests/test_demo.py": "import demo\n\n\ndef test_version():\n    assert demo.__version__ == '1.2.3'\n",
    "build/lib/demo/__init__.py": "stale = True\n",
    "demo/__pycache__/x.cpython-311.pyc": "junk",
}


def test_a_project_that_reads_its_own_metadata_keeps_it(tmp_path: Path) -> None:
    tree = tmp_path / "sdist"
    for rel, text in SELF_AWARE.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    repo = ProjectRepo.from_tree(tree, tmp_path / "repo", "demo 1.2.3 from its PyPI sdist")
    files = repo.files(repo.base_commit)
    assert "demo.egg-info/PKG-INFO" in files, "the sdist's metadata was dropped: `import demo` fails"
    assert not any(f.startswith("build/") or "__pycache__" in f for f in files), files
    ran = subprocess.run([sys.executable, "-I", "-c", "import sys; sys.path.insert(0, '.'); import demo; "
                          "print(demo.__version__)"], cwd=tmp_path / "repo", capture_output=True, text=True)
    assert ran.returncode == 0 and ran.stdout.strip() == "1.2.3", ran.stderr
