"""Warm start: supervised fine-tuning on demonstrations before GRPO (harness.yaml `warm_start`).

When a policy cannot yet act (SmolLM2 on SWE never sends a command that edits a file), every GRPO group
scores the same and RL has nothing to learn from. The field's answer is a short supervised phase on
demonstrations first (SWE-Gym's rejection-sampled trajectories, SWE-smith's SFT before RL, DeepSWE's
cold start). Here a domain that has demonstrations (`demonstrations(cfg, tasks, fits, limit)`: whole
conversations built from the *train* tasks) gets `warm_start.steps` optimizer steps of TRL's SFTTrainer,
one example per demonstration with the loss on its assistant turns only (`training_examples`); GRPO then
starts from the result. Off (`steps: 0`) in the
template. What it did goes to `warm_start.json` beside the checkpoint.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

from datasets import Dataset

from harness.config import HarnessConfig, split_batch
from harness.domain import DomainModule
from harness.policy import training_dtype


def token_ids(tokenizer: Any, messages: list[dict[str, str]], generation_prompt: bool = False) -> list[int]:
    """The chat template's text for these messages, tokenized as the rollout tokenizes a prompt."""
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation_prompt)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def _turn_span(tokenizer: Any, conv: list[dict[str, str]], i: int) -> tuple[list[int], int]:
    """(ids of the conversation through assistant turn i, where that turn starts): TRL's prompt-completion
    split (the completion starts where the prompt's and the prompt+turn's ids diverge), so the span is the
    turn's reply, its end-of-turn token and whatever the template puts after it."""
    before = token_ids(tokenizer, conv[:i], generation_prompt=True)
    through = token_ids(tokenizer, conv[: i + 1])
    shared = min(len(before), len(through))
    start = next((k for k in range(shared) if before[k] != through[k]), shared)
    return through, start


def training_examples(tokenizer: Any, conversations: list[list[dict[str, str]]],
                      max_length: int | None = None) -> list[dict[str, Any]]:
    """Tokenized examples, `input_ids` with a `completion_mask` on the assistant turns (the loss's tokens).

    One example per demonstration, its every assistant turn in the loss: under a causal model each turn's
    tokens see exactly the context they would see in an example of their own, so the gradient is that of
    the conversation's turn examples in one batch, at the cost of the longest of them instead of their sum
    (each of SWE's turn examples repeats the statement and the turns before it: 0.32x the time,
    bench/warm_start_examples.py). A conversation falls back to one example per assistant turn where the
    template renders its beginning differently alone than inside the whole (some drop earlier turns'
    reasoning: a turn would be learned in a context the policy never sees), or where it is longer than
    `max_length` (cutting it would drop its last turns; a turn example is cut only in its own tail)."""
    examples = []
    for conv in conversations:
        turns = [i for i, m in enumerate(conv) if m["role"] == "assistant"]
        spans = [_turn_span(tokenizer, conv, i) for i in turns]
        whole = token_ids(tokenizer, conv)
        fits = max_length is None or len(whole) <= max_length
        if fits and all(whole[: len(through)] == through for through, _ in spans):
            mask = [0] * len(whole)
            for through, start in spans:
                mask[start: len(through)] = [1] * (len(through) - start)
            examples.append({"input_ids": whole, "completion_mask": mask, "turns": len(turns)})
        else:
            examples.extend({"input_ids": through, "completion_mask": [0] * start + [1] * (len(through) - start),
                             "turns": 1} for through, start in spans)
    return examples


def warm_start(
    model: Any, tokenizer: Any, peft_config: Any, domain: DomainModule, cfg: HarnessConfig,
    tasks: list[dict[str, Any]], seed: int, out: Path, scratch: str,
) -> tuple[Any, Any]:
    """(model, peft_config) for GRPO: unchanged when the warm start is off or has no demonstrations; else the
    fine-tuned model, already carrying its LoRA adapter (so GRPO gets no second peft_config)."""
    ws = cfg.warm_start
    make = getattr(domain, "demonstrations", None)
    if ws.steps == 0 or make is None:
        return model, peft_config
    started = time.monotonic()
    turn_tokens = int(cfg.domain_settings.get("turn_tokens", cfg.rl.max_completion_length))  # type: ignore[call-overload]

    def fits(reply: str) -> bool:
        return len(tokenizer(reply, add_special_tokens=False)["input_ids"]) < turn_tokens  # room for the end token

    conversations = make(cfg, tasks, fits, ws.max_demos)
    examples = training_examples(tokenizer, conversations, ws.max_length)
    report: dict[str, Any] = {"demonstrations": len(conversations), "examples": len(examples),
                              "turns": sum(e.pop("turns") for e in examples), "steps": 0, "loss": []}
    if examples:
        report["planned_steps"] = planned_steps(cfg, len(examples))
        trainer = _trainer(model, tokenizer, peft_config, cfg, examples, seed, scratch)
        trainer.train()
        report["steps"] = trainer.state.global_step
        report["loss"] = [round(float(h["loss"]), 4) for h in trainer.state.log_history if "loss" in h]
        model, peft_config = trainer.model, None
    report["wall_time"] = round(time.monotonic() - started, 1)
    (out / "warm_start.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(f"warm start: {report['demonstrations']} demonstrations ({report['turns']} assistant turns) in "
          f"{report['examples']} examples, "
          f"{report['steps']} steps, loss {report['loss'][:1]} -> {report['loss'][-1:]}", flush=True)
    return model, peft_config


def planned_steps(cfg: HarnessConfig, examples: int) -> int:
    """`warm_start.steps`, cut to `warm_start.passes` passes over `examples` where that is set: a skill sized
    for 48 demonstrations (96 steps, two passes) makes two passes, not four, over a task set that yields 24."""
    ws = cfg.warm_start
    if ws.passes is None or examples == 0:
        return ws.steps
    return max(1, min(ws.steps, math.ceil(ws.passes * examples / ws.batch_size)))


def _trainer(model: Any, tokenizer: Any, peft_config: Any, cfg: HarnessConfig, examples: list[dict[str, Any]],
             seed: int, scratch: str) -> Any:
    from trl import SFTTrainer

    from harness.lm_head import score_completion_rows_only
    from harness.threads import FollowShare

    score_completion_rows_only()  # the loss reads the replies only: 0.57-0.84x the time on 2 CPU cores
    return SFTTrainer(model=model, args=sft_args(cfg, seed, scratch, len(examples)),
                      train_dataset=Dataset.from_list(examples),
                      processing_class=tokenizer, peft_config=peft_config, callbacks=[FollowShare()])


def sft_args(cfg: HarnessConfig, seed: int, scratch: str, examples: int = 0) -> Any:
    """TRL's SFTConfig for the warm start. A step's `batch_size` examples go through forward and backward at
    most `rl.micro_batch_size` at a time (gradient accumulation: the same step, less memory): four SWE turn
    examples of up to 1536 tokens in one pass took SmolLM2's warm start to 15 GB resident, over the 12 GB cap."""
    import torch
    from trl import SFTConfig

    ws = cfg.warm_start
    dtype = training_dtype(cfg.rl.precision)
    per_pass, passes = split_batch(ws.batch_size, cfg.rl.micro_batch_size)
    return SFTConfig(
        output_dir=f"{scratch}/warm-start",
        max_steps=planned_steps(cfg, examples),
        per_device_train_batch_size=per_pass,
        gradient_accumulation_steps=passes,
        learning_rate=ws.learning_rate,
        max_length=ws.max_length,
        completion_only_loss=True,
        packing=False,
        bf16=dtype == torch.bfloat16,
        fp16=dtype == torch.float16,
        gradient_checkpointing=False,
        use_cpu=not torch.cuda.is_available(),
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        seed=seed,
        disable_tqdm=True,
    )
