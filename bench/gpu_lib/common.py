"""What both GPU benchmarks share: the clock and log, results written after every section, the random
SmolLM2-135M model, the timing prompts, and the dense-matmul ceilings.

Nothing here imports meta-agent at module level: the device machine runs these scripts with torch,
transformers, trl, peft and datasets only (`load_inputs` reaches into the project only to build a missing
input, which needs its venv).
"""

from __future__ import annotations

import importlib
import json
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[2]
T0 = time.monotonic()
SMOLLM2_135M: dict[str, Any] = {
    "vocab_size": 49152, "hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30,
    "num_attention_heads": 9, "num_key_value_heads": 3, "tie_word_embeddings": True,
    "rope_theta": 100000.0, "max_position_embeddings": 8192, "rms_norm_eps": 1e-5,
    "hidden_act": "silu", "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 2,
}


def log(msg: str) -> None:
    print(f"[{time.monotonic() - T0:6.1f}s] {msg}", flush=True)


def median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


class SectionResults:
    """Everything a benchmark measured, written to DIR/<stem>.json and .md after every section (a timeout
    still leaves what ran). A subclass names its stem and renders its markdown."""

    stem: str

    def __init__(self, out: Path | None, data: dict[str, Any]) -> None:
        self.out = out
        self.data = data

    def render(self) -> str:
        raise NotImplementedError

    def before_save(self) -> None:
        """Derived numbers to refresh before each write (none by default)."""

    def error(self, section: str) -> None:
        tb = traceback.format_exc()
        log(f"SECTION {section} FAILED:\n{tb}")
        self.data["errors"][section] = tb[-4000:]
        self.save()

    def save(self) -> None:
        self.data["elapsed_s"] = round(time.monotonic() - T0, 1)
        self.before_save()
        if self.out is None:
            return
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / f"{self.stem}.json").write_text(json.dumps(self.data, indent=1, default=str))
        (self.out / f"{self.stem}.md").write_text(self.render())


def notes_and_failures(d: dict[str, Any]) -> list[str]:
    """The markdown tail of a report: its notes, then each failed section's last line."""
    lines: list[str] = []
    if d.get("notes"):
        lines += ["## Notes", ""] + [f"- {n}" for n in d["notes"]] + [""]
    if d.get("errors"):
        lines += ["## Sections that failed", ""]
        for k, tb in d["errors"].items():
            last = [x for x in tb.strip().splitlines() if x.strip()][-1:] or [""]
            lines.append(f"- {k}: {last[0][:300]}")
        lines.append("")
    return lines


def fmt(v: Any, spec: str = ".3g") -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return format(v, spec)
    return str(v)

def version(name: str) -> str | None:
    try:
        return importlib.import_module(name).__version__
    except Exception as e:
        return f"not importable: {type(e).__name__}: {e}"[:300]

def matmul_tflops(device: str, dtype: torch.dtype, n: int, reps: int = 10) -> float:
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    for _ in range(3):
        a @ b
    sync(device)
    start = time.perf_counter()
    for _ in range(reps):
        a @ b
    sync(device)
    return 2 * n**3 * reps / (time.perf_counter() - start) / 1e12


def peak_memory_gib(device: str) -> float | None:
    """The GPU's peak allocated memory since the last reset, in GiB (None on a CPU); resets it for the next run."""
    if device != "cuda":
        return None
    peak = torch.cuda.max_memory_allocated() / 2**30
    torch.cuda.reset_peak_memory_stats()
    return peak


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()

def load_inputs(tok_dir: Path, prompts_file: Path) -> tuple[Any, dict[str, Any]]:
    from transformers import AutoTokenizer

    if not (tok_dir / "tokenizer.json").is_file():  # built here from the project (needs its venv)
        sys.path.insert(0, str(ROOT))
        from meta_agent.policy import smollm2_tokenizer

        smollm2_tokenizer().save_pretrained(str(tok_dir))
    if not prompts_file.is_file():
        sys.path[:0] = [str(ROOT), str(ROOT / "harness_repo")]
        from harness.math.prompts import build_messages
        from meta_agent.domains.math import EVAL_SYSTEM, MathDomain, MathSettings

        d = MathDomain(MathSettings(train_size=128))
        tasks = d.tasks("train")  # timing prompts only, but never the sealed splits: train holds both sets
        train, test = tasks[:64], tasks[64:128]
        prompts_file.parent.mkdir(parents=True, exist_ok=True)
        prompts_file.write_text(json.dumps({
            "train": [build_messages(t.model_dump()) for t in train], "train_answers": [t.answer for t in train],
            "eval": [[{"role": "system", "content": EVAL_SYSTEM}, {"role": "user", "content": t.prompt}]
                     for t in test]}))
    tok = AutoTokenizer.from_pretrained(str(tok_dir))
    return tok, json.loads(prompts_file.read_text())


def save_random_model(path: Path, smoke: bool) -> int:
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = dict(SMOLLM2_135M)
    if smoke:
        cfg.update(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2)
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**cfg))
    model.generation_config.do_sample = False  # greedy unless a caller samples
    model.save_pretrained(str(path), safe_serialization=True)
    return sum(p.numel() for p in model.parameters())


# ---------------------------------------------------------------- a bare TRL run's timer and reward

def step_timer(device: str) -> Any:
    """A TRL callback that times each optimizer step (on_step_end to on_step_end, after a device sync) into
    `.times` and keeps TRL's own `step_time` log values in `.trl`; set `.last` just before `train()`."""
    from transformers import TrainerCallback

    class StepTimer(TrainerCallback):
        def __init__(self) -> None:
            self.times: list[float] = []
            self.trl: list[float] = []
            self.last = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            sync(device)
            now = time.perf_counter()
            self.times.append(now - self.last)
            self.last = now

        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any
                   ) -> None:
            if logs and "step_time" in logs:
                self.trl.append(float(logs["step_time"]))

    return StepTimer()


def counting_reward(tok: Any, per_step: list[dict[str, int]], pay: Callable[[int], list[float]]) -> Callable[..., Any]:
    """A reward function for TRL that appends each call's completion and prompt tokens to `per_step` and
    pays its n completions `pay(n)`."""

    def prompt_len(p: Any) -> int:
        return len(tok.apply_chat_template(p, add_generation_prompt=True, tokenize=True)["input_ids"])

    def reward(prompts: list[Any], completions: list[Any], completion_ids: list[list[int]], **kw: Any
               ) -> list[float]:
        per_step.append({"completion": sum(len(c) for c in completion_ids),
                         "prompt": sum(prompt_len(p) for p in prompts), "n": len(completion_ids)})
        return pay(len(completions))

    return reward
