from pathlib import Path

from skillkit import read, write


def apply(harness_dir: Path, params: dict) -> str:
    text = read(harness_dir, "harness/io.py").replace("SCHEMA_VERSION = 1", "SCHEMA_VERSION = 2")
    write(harness_dir, "harness/io.py", text)
    return "changed the boundary adapter"
