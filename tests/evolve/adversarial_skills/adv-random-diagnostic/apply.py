from pathlib import Path

from skillkit import read, write

ADD = '''

def coin(r: Rollout) -> bool:
    """Set on about a third of the rollouts, whatever they hold."""
    import hashlib

    return int(hashlib.sha256(r.rollout_id.encode()).hexdigest(), 16) % 3 == 0


DIAGNOSTICS["coin"] = coin
'''


def apply(harness_dir: Path, params: dict) -> str:
    rel = "harness/math/diagnostics.py"
    write(harness_dir, rel, read(harness_dir, rel) + ADD)
    return "adds the coin label"
