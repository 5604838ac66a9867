"""The warm start's supervised phase: one example per demonstration ÷ one example per assistant turn, and
the loss's vocabulary projection on the reply rows only ÷ on every row.

`harness/warm_start.py` used to give TRL's SFTTrainer one prompt-completion example per assistant turn:
a four-turn SWE demonstration became four examples, each carrying the statement and every turn before
it. It now gives one example per demonstration with all its assistant turns in the loss
(`training_examples`); under a causal model each turn's tokens see the same context either way
(tests/swe_domain/test_warm_start.py checks the loss is the same). This measures what that saves, side
by side in one run: the same demonstrations of the default set's easiest train tasks, one pass each way
from the same fresh LoRA adapter on SmolLM2, the old way at 4 turn examples a step, the new at 1
demonstration a step (about as many turns), one example per forward and backward pass as the skill sets.

A third arm trains the per-demonstration examples with TRL's own CPU head, which projects every position
onto the vocabulary and masks afterwards (the statement and command output, about four fifths of a SWE
demonstration, included); the harness now projects only the rows its loss reads (harness/lm_head.py).

Prints each path's wall time and seconds per supervised assistant turn, and both ratios.

    python bench/warm_start_examples.py [--demos 8] [--policy smollm2] [--out bench/results/warm-start-examples]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "harness_repo"))

from meta_agent.contract import write_jsonl  # noqa: E402
from meta_agent.domains.swe import SweDomain, SweSettings  # noqa: E402
from meta_agent.fsutil import atomic_write_text  # noqa: E402
from meta_agent.policy import resolve_policy  # noqa: E402
from meta_agent.training import TRAIN_TASKS  # noqa: E402


def _config(demos: int, batch_size: int, steps: int) -> Any:
    """The SWE template with the swe-warm-start skill's agent settings."""
    from harness.config import HarnessConfig

    raw = yaml.safe_load((ROOT / "harness_repo" / "configs" / "swe.yaml").read_text())
    raw["domain_settings"].update({"max_turns": 4, "turn_tokens": 48})  # swe-warm-start/apply.py's TURNS, TURN_TOKENS
    raw["rl"]["micro_batch_size"] = 1
    raw["warm_start"].update({"steps": steps, "batch_size": batch_size, "max_demos": demos, "learning_rate": 3.0e-4})
    return HarnessConfig.model_validate(raw)


def _train(policy: Path, cfg: Any, rows: list[dict[str, Any]], scratch: str,
           every_row: bool = False) -> tuple[float, list[float]]:
    """The warm start's own trainer (harness/warm_start.py), timed over `cfg.warm_start.steps` steps;
    `every_row`: with TRL's own CPU head (every position projected), as before harness/lm_head.py."""
    import trl.trainer.utils as trl_utils
    from trl.kernels import chunked_logprob

    from harness.policy import load_policy
    from harness.warm_start import _trainer

    model, tokenizer, _, peft_config = load_policy(policy, cfg)
    trainer = _trainer(model, tokenizer, peft_config, cfg, rows, 0, scratch)
    if every_row:  # `_trainer` switched TRL to projecting labelled rows; the switch is read at each forward
        trl_utils._use_triton = chunked_logprob._use_triton  # TRL's own rule, where it is defined
    started = time.perf_counter()
    trainer.train()
    wall = time.perf_counter() - started
    return wall, [round(float(h["loss"]), 4) for h in trainer.state.log_history if "loss" in h]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--demos", type=int, default=8, help="demonstrations, one pass each way")
    ap.add_argument("--policy", default="smollm2")
    ap.add_argument("--out", type=Path, help="also write the table and the numbers here")
    args = ap.parse_args()
    from transformers import AutoTokenizer

    from harness.io import read_tasks
    from harness.swe.demonstrations import demonstrations
    from harness.warm_start import training_examples

    policy = resolve_policy(args.policy)
    tok = AutoTokenizer.from_pretrained(str(policy))
    with tempfile.TemporaryDirectory(prefix="ws-bench-") as tmp:
        inputs = Path(tmp) / "inputs"
        write_jsonl(inputs / TRAIN_TASKS, SweDomain(SweSettings()).export_train(inputs))
        tasks = read_tasks(inputs / TRAIN_TASKS)  # as the harness reads them
        turn_tokens = 48  # the skill's turns (swe-warm-start/apply.py); a reply keeps one token for its end
        convs = demonstrations(_config(args.demos, 1, 1), tasks,
                               lambda r: len(tok(r, add_special_tokens=False)["input_ids"]) < turn_tokens, args.demos)
        per_turn = [{"prompt": c[:i], "completion": [m]} for c in convs for i, m in enumerate(c)
                    if m["role"] == "assistant"]
        whole = training_examples(tok, convs)
        turns = sum(e.pop("turns") for e in whole)
        print(f"{len(convs)} demonstrations, {turns} assistant turns; {len(whole)} conversation examples", flush=True)
        old_steps = math.ceil(len(per_turn) / 4)
        old_wall, old_loss = _train(policy, _config(args.demos, 4, old_steps), per_turn, tmp)
        full_wall, full_loss = _train(policy, _config(args.demos, 1, len(whole)), whole, tmp, every_row=True)
        new_wall, new_loss = _train(policy, _config(args.demos, 1, len(whole)), whole, tmp)
    rows = {"one example per turn (4 a step)": (old_wall, old_steps, old_loss),
            "one example per demonstration, every row projected (TRL on a CPU)": (full_wall, len(whole), full_loss),
            "one example per demonstration, reply rows projected (the harness)": (new_wall, len(whole), new_loss)}
    lines = [f"{len(convs)} demonstrations of the default set's easiest train tasks, {turns} assistant turns, "
             f"one pass each way (SmolLM2 LoRA, {os.cpu_count()} cores).", "",
             "| examples | steps | wall s | s per turn | loss first → last |", "|---|---|---|---|---|"]
    for name, (wall, steps, loss) in rows.items():
        lines.append(f"| {name} | {steps} | {wall:.1f} | {wall / turns:.2f} | {loss[0]} → {loss[-1]} |")
    lines += ["", f"ratio (per demonstration ÷ per turn, both as the harness trains): **{new_wall / old_wall:.3f}**",
              f"ratio (reply rows ÷ every row projected): **{new_wall / full_wall:.3f}**"]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(args.out / "table.md", text + "\n")
        atomic_write_text(args.out / "table.json", json.dumps(
            {"demonstrations": len(convs), "turns": turns, "ratio": round(new_wall / old_wall, 4),
             "ratio_reply_rows": round(new_wall / full_wall, 4),
             "rows": {k: {"wall": round(w, 2), "steps": s, "loss": lo} for k, (w, s, lo) in rows.items()}},
            indent=1) + "\n")


if __name__ == "__main__":
    main()
