"""The multi-turn rollout hands TRL whole episodes whose loss mask covers policy tokens only."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from meta_agent.contract import write_jsonl
from meta_agent.domains.swe import SweDomain, SweSettings
from meta_agent.training import TRAIN_TASKS

pytestmark = pytest.mark.slow  # trains a model or runs a whole loop: not in `make test-fast`


def test_env_mask_zeroes_exactly_the_observation_tokens(
    harness_modules: Path, calc_taskset: str, tiny_policy: Path, tmp_path: Path
) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from harness.config import load_config
    from harness.io import read_tasks
    from harness.swe.prompts import build_messages
    from harness.swe.rollout_func import make_rollout_func

    domain = SweDomain(SweSettings(taskset=calc_taskset, sandbox="bwrap"))
    inputs = tmp_path / "inputs"
    write_jsonl(inputs / TRAIN_TASKS, domain.export_train(inputs))
    tasks = {t["id"]: t for t in read_tasks(inputs / TRAIN_TASKS)}
    task = next(iter(tasks.values()))
    tok = AutoTokenizer.from_pretrained(str(tiny_policy))
    model = AutoModelForCausalLM.from_pretrained(str(tiny_policy))
    trainer: Any = SimpleNamespace(processing_class=tok, model=model, eos_token_ids=[tok.eos_token_id],
                                   accelerator=SimpleNamespace(unwrap_model=lambda m: m))
    out = make_rollout_func(load_config(), tasks)([build_messages(task)] * 2, trainer)

    for prompt, completion, mask, episode in zip(out["prompt_ids"], out["completion_ids"], out["env_mask"],
                                                 out["episode"], strict=True):
        assert len(completion) == len(mask)
        assert sum(mask) == episode["policy_tokens"] > 0
        policy_text = tok.decode([t for t, m in zip(completion, mask, strict=True) if m], skip_special_tokens=True)
        env_text = tok.decode([t for t, m in zip(completion, mask, strict=True) if not m], skip_special_tokens=True)
        turns = episode["transcript"].split("[assistant]\n")[1:]
        replies = [t.split("\n[observation]\n")[0] for t in turns]
        assert policy_text == "".join(replies), "policy tokens decode to exactly the assistant replies"
        # Observations between turns are in the completion (the policy saw them) but never in the loss.
        assert episode["turns"] == 3 and "No command found" in env_text
        assert "No command found" not in policy_text
        # The sequence the policy was trained on is the chat template's own rendering of the conversation.
        rendered = tok.decode(prompt + completion)
        assert rendered.startswith(tok.apply_chat_template(build_messages(task), tokenize=False,
                                                           add_generation_prompt=True))
        assert rendered.count("<|im_start|>user") == 1 + episode["turns"] - 1
