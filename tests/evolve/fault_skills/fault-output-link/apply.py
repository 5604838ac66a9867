from pathlib import Path

from skillkit import read, write

LINK = '''    os.replace(out / "rollouts.jsonl", out / "rollouts.real")
    os.symlink("/etc/hostname", out / "rollouts.jsonl")
'''


def apply(harness_dir: Path, params: dict) -> str:
    rel = "harness/train.py"
    text = read(harness_dir, rel)
    text = text.replace("    metrics.commit()\n", "    metrics.commit()\n" + LINK, 1)
    if "import os\n" not in text:
        future = "from __future__ import annotations\n"
        text = text.replace(future, future + "\nimport os\n", 1)
    write(harness_dir, rel, text)
    return "rollouts point at a host file"
