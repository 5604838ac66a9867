"""Which sealed splits a benchmark seed was scored on, and pairing one benchmark with another's.

Each seed draws its selection and test tasks from the secret in `seed-N/data/sealed-secret`, made at
random the first time the seed runs. Two benchmarks (say, the search with and without archive parents)
are comparable seed by seed only when their seeds share that secret: then every arm of both was scored on
the same test tasks, and their rows differ only by what the search did. `adopt` gives a new benchmark's
seed the secret of an earlier one's (`bench/efficacy.py --splits-from`); `fingerprint` names a secret
without revealing it, so the ablation table can show which rows share their tasks.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from meta_agent.errors import UserError
from meta_agent.fsutil import atomic_write_text
from meta_agent.sealed import SECRET_FILE


def secret_file(seed_dir: Path) -> Path:
    return seed_dir / "data" / SECRET_FILE


def fingerprint(seed_dir: Path) -> str | None:
    """A short name for the seed's secret (None when the seed never ran)."""
    path = secret_file(seed_dir)
    if not path.is_file():
        return None
    return hashlib.sha256(f"splits:{path.read_text().strip()}".encode()).hexdigest()[:8]


def adopt(seed_dir: Path, source: Path) -> None:
    """Give `seed_dir` the secret of the same seed in the benchmark folder `source`, before any arm runs.

    A seed that already has a different secret has scored (or begun scoring) its arms on other tasks:
    mixing would void its paired deltas, so that is an error naming the way out, never an overwrite."""
    src = secret_file(source / seed_dir.name)
    if not src.is_file():
        raise UserError(f"--splits-from {source}: it has no {seed_dir.name} to take splits from ({src} is missing)")
    secret = src.read_text().strip()
    if not secret:
        raise UserError(f"--splits-from {source}: {src} is empty")
    dst = secret_file(seed_dir)
    if dst.is_file():
        if dst.read_text().strip() == secret:
            return
        raise UserError(f"{seed_dir} already drew its splits from another secret than {src}; its arms cannot be "
                        f"paired with {source}'s. Use a new --out, or delete {seed_dir} to start that seed over")
    atomic_write_text(dst, secret + "\n", mode=0o600)  # whole or absent: a torn copy would be another secret


__all__ = ["adopt", "fingerprint", "secret_file"]
