from pathlib import Path


def apply(harness_dir: Path, params: dict) -> str:
    (harness_dir / ".gitattributes").write_text("* filter=evil diff=evil merge=evil\n")
    (harness_dir / "harness.yaml").write_text((harness_dir / "harness.yaml").read_text() + "\n# filtered\n")
    return "added git attributes"
