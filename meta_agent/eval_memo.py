"""Reuse a sealed evaluation of the same weights instead of decoding it again.

The sealed evaluation is greedy and fixed, so its answers are a function of the weights it runs, the
split and the protocol. Within a run the same weights are evaluated again and again when a training
changed nothing: a GRPO step whose groups all scored alike has zero advantages, so its LoRA update is
exactly zero and the checkpoint's `lora_B` stays at its zero start; merged, that is the run's root model
bit for bit. In the SWE demo 6 of 7 trainings end that way and each evaluation costs ~100 s on 2 cores.

`evaluate_memoized` keys an evaluation by what it runs: the policy's effective weights (`policy_digest`),
the run's root model, the domain and its settings, the split's task ids, `limit` and `shard`. A hit returns
the stored answers with `reused_from` naming the policy that was decoded; a miss evaluates and stores.
The memo lives where no sandbox reads or writes: the store every run shares (`reuse/evaluations/` in the
user cache, `train_memo.reuse_root`), or the run's own `RUN/eval-memo/` when reuse across runs is off. A
digest is of the checkpoint's bytes, so a harness cannot make its checkpoint borrow another policy's
answers. The least recently used answers are dropped past `MEMO_MB`.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from meta_agent import __version__
from meta_agent.contract import ContractError
from meta_agent.domains.base import Domain, EvalResult, Shard, Split, evaluate_showing_progress
from meta_agent.fsutil import atomic_write_text
from meta_agent.policy import base_model_of
from meta_agent.train_memo import code_digest
from meta_agent.untrusted_files import tree_problems

MEMO_DIR = "eval-memo"
MEMO_MB = 256
"""Answers of the least recently used evaluations are dropped once a memo holds more than this."""
ROOT = "root"
"""The digest of a policy whose effective weights are the run's root model's."""
_NOT_WEIGHTS = {"README.md", "manifest.json", "optimizer_state.safetensors"}
"""Checkpoint files the evaluator never reads (the manifest's base model is keyed separately)."""
_LORA_EXTRAS = ("use_dora", "modules_to_save", "trainable_token_indices", "lora_bias", "target_parameters",
                "layer_replication", "alora_invocation_tokens", "use_bdlora", "use_qalora")
"""adapter_config.json settings under which a zero `lora_B` no longer means an unchanged model."""


def _plain_files(policy: Path) -> list[Path] | None:
    """Every file under `policy`, sorted; None when the tree is not plain data (`tree_problems`: a link, a
    hard link, a special file, too many entries). The evaluator's loader refuses such a checkpoint."""
    if tree_problems(policy, limit=1):
        return None
    return sorted(p for p in policy.rglob("*") if p.is_file())


def _finite(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _unchanged_lora(policy: Path, files: list[Path]) -> bool:
    """A plain LoRA adapter whose every `lora_B` is exactly zero: merged, it adds exactly nothing."""
    from safetensors import safe_open

    names = {f.relative_to(policy).as_posix() for f in files} - _NOT_WEIGHTS
    if names - {"adapter_model.safetensors", "adapter_config.json", "tokenizer.json", "tokenizer_config.json",
                "chat_template.jinja", "special_tokens_map.json"} or "adapter_model.safetensors" not in names:
        return False  # the tokenizer files are the run's own: the evaluator takes the root's
    try:
        config = json.loads((policy / "adapter_config.json").read_text())
    except (OSError, ValueError):
        return False
    if (not isinstance(config, dict) or config.get("peft_type") != "LORA" or config.get("bias", "none") != "none"
            or any(config.get(k) for k in _LORA_EXTRAS) or config.get("rank_pattern") or config.get("alpha_pattern")
            or not _finite(config.get("lora_alpha")) or not _finite(config.get("r")) or config["r"] <= 0):
        return False  # 0 x an infinite scale or weight is NaN, not 0
    try:
        with safe_open(str(policy / "adapter_model.safetensors"), framework="pt") as f:
            keys = list(f.keys())
            if not keys or any(".lora_A." not in k and ".lora_B." not in k for k in keys):
                return False
            return all(int(f.get_tensor(k).count_nonzero()) == 0 if ".lora_B." in k
                       else bool(f.get_tensor(k).isfinite().all()) for k in keys)
    except Exception:  # an unreadable adapter is the loader's to refuse, not ours
        return False


def policy_digest(policy: Path, root: Path) -> str | None:
    """What the sealed evaluator would run, as a digest: `ROOT` for the root model itself or a LoRA
    checkpoint on it that changed nothing; else a hash of the checkpoint's weight and config files (two
    byte-identical checkpoints share it); None when the checkpoint cannot be keyed (not plain files)."""
    if policy.resolve() == root.resolve():
        return ROOT
    if not policy.is_dir():
        return None
    files = _plain_files(policy)
    if files is None:
        return None
    try:
        base = base_model_of(policy)  # itself, unless a LoRA checkpoint
    except ContractError:
        return None  # a manifest the loader refuses
    if base != policy and base.resolve() == root.resolve() and _unchanged_lora(policy, files):
        return ROOT
    h = hashlib.sha256(str(base.resolve() if base != policy else "").encode())
    for f in files:
        name = f.relative_to(policy).as_posix()
        if name in _NOT_WEIGHTS:
            continue
        h.update(f"\0{name}\0{f.stat().st_size}\0".encode())
        with f.open("rb") as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
    return h.hexdigest()


def tasks_digest(domain: Domain, split: Split) -> str:
    """The split's tasks as the evaluator sees them (id, prompt, answer), as a digest."""
    return hashlib.sha256(json.dumps([[t.id, t.prompt, t.answer] for t in domain.tasks(split)]).encode()).hexdigest()


def memo_key(domain: Domain, policy: Path, root: Path, split: Split, limit: int | None,
             shard: Shard | None) -> str | None:
    """The evaluation's key, or None when it cannot be memoized."""
    digest = policy_digest(policy, root)
    if digest is None:
        return None
    settings = getattr(domain, "settings", None)
    dump = getattr(settings, "model_dump_json", None)
    tasks = tasks_digest(domain, split)
    parts = {"meta_agent": __version__, "code": code_digest(), "domain": domain.name,
             "settings": dump() if callable(dump) else None,
             "split": split, "tasks": tasks, "limit": limit, "shard": list(shard) if shard else None,
             "root": str(root.resolve()), "policy": digest}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def recall(memo_dir: Path, key: str) -> EvalResult | None:
    path = memo_dir / f"{key}.json"
    try:
        seen = EvalResult.model_validate_json(path.read_text())
        os.utime(path)  # recently used: the last to be dropped
        return seen
    except (OSError, ValueError):
        return None  # absent or torn: evaluate again


def trim(memo_dir: Path, keep_mb: int = MEMO_MB) -> None:
    """Drop the least recently used answers past `keep_mb`, each with its lock when no process holds it (a
    lock held means its key is being decoded or read now)."""
    try:
        answers = sorted((st.st_mtime, st.st_size, p) for p in memo_dir.glob("*.json") for st in [p.stat()])
    except OSError:
        return  # another process trimmed a file away mid-listing: the next store trims
    total = sum(size for _, size, _ in answers)
    for _, size, path in answers:
        if total <= keep_mb << 20:
            break
        lock = path.with_suffix(".lock")
        try:
            with lock.open("a") as held:
                fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
                path.unlink(missing_ok=True)
                lock.unlink(missing_ok=True)
        except OSError:
            continue  # in use (or gone): kept for now
        total -= size


def evaluate_memoized(domain: Domain, policy: Path, split: Split, on_progress: Callable[[int], None] | None,
                      *, memo_dir: Path | None, root: Path, limit: int | None = None,
                      shard: Shard | None = None) -> EvalResult:
    """`evaluate_showing_progress`, reusing `memo_dir`'s answers for the same effective weights (module doc).
    `memo_dir` None evaluates as before."""
    started = time.monotonic()
    sharded: dict[str, Any] = {} if shard is None else {"shard": shard}  # a plugin domain need not take it
    key = memo_key(domain, policy, root, split, limit, shard) if memo_dir is not None else None
    if key is None or memo_dir is None:
        return evaluate_showing_progress(domain, policy, split, on_progress, limit=limit, root=root, **sharded)
    memo_dir.mkdir(parents=True, exist_ok=True)
    # One evaluation per key at a time: a job that trained the same weights beside another (main and its
    # noise rerun) waits for that one's answers instead of decoding them again on the same cores. The lock
    # goes with its holder's process, killed or not.
    with (memo_dir / f"{key}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        seen = recall(memo_dir, key)
        if seen is not None:
            if on_progress is not None and seen.results:
                on_progress(len(seen.results))
            return seen.model_copy(update={"policy": str(policy), "reused_from": seen.reused_from or seen.policy,
                                           "wall_time": time.monotonic() - started})
        result = evaluate_showing_progress(domain, policy, split, on_progress, limit=limit, root=root, **sharded)
        atomic_write_text(memo_dir / f"{key}.json", result.model_dump_json())
    trim(memo_dir)
    return result


def reuse_note(result: EvalResult, run_dir: Path | None) -> str:
    """For a verdict's reason: whose answers these are, when they were reused ('' when decoded). A checkpoint
    of this run is named by its place in the run; one of an earlier run beside it by that run's name."""
    if result.reused_from is None:
        return ""
    source = Path(result.reused_from)
    if run_dir is not None and source.is_relative_to(run_dir):
        shown = str(source.relative_to(run_dir))
    elif run_dir is not None and source.is_relative_to(run_dir.parent):
        shown = f"run {source.relative_to(run_dir.parent)}"
    else:
        shown = str(source)
    return f"; its trained weights equal {shown}'s, whose sealed answers were reused"
