"""Register the multiple_answers diagnostic label."""

from pathlib import Path

from skillkit import add_to_registry

SOURCE = '''
def multiple_answers(r: Rollout) -> bool:
    """Answer spraying: two or more distinct 'Answer:' values, or eight or more bare numbers."""
    import re

    stated = set(re.findall(r"answer\\s*[:=]\\s*(-?\\d[\\d,]*(?:\\.\\d+)?)", r.completion, flags=re.IGNORECASE))
    bare = re.findall(r"(?<![\\w.])-?\\d+(?![\\w.])", r.completion)
    return len(stated) >= 2 or len(bare) >= 8
'''


def apply(harness_dir: Path, params: dict) -> str:
    add_to_registry(harness_dir, "harness/math/diagnostics.py", "DIAGNOSTICS", "multiple_answers", SOURCE,
                    "multiple_answers")
    return "added diagnostic label multiple_answers"
