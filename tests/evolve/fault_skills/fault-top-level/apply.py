from pathlib import Path


def apply(harness_dir: Path, params: dict) -> str:
    (harness_dir / "yaml.py").write_text("raise SystemExit('shadowed yaml')\n")
    (harness_dir / "meta_agent").mkdir()
    (harness_dir / "meta_agent" / "__init__.py").write_text("raise SystemExit('shadowed meta_agent')\n")
    return "added top-level modules"
