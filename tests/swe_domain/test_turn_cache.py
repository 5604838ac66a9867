"""A training episode's next turn reuses the keys and values its last turn encoded, and samples what
re-encoding the whole conversation would have sampled."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
import yaml

pytestmark = pytest.mark.slow  # runs a model through whole episodes: not in `make test-fast`


def _model(tiny_policy: Path) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_policy))
    return AutoModelForCausalLM.from_pretrained(str(tiny_policy)).eval(), tok


def _plain(model: Any, seqs: list[list[int]], pad: int, new: int) -> list[list[int]]:
    width = max(len(x) for x in seqs)
    ids = torch.tensor([[pad] * (width - len(x)) + x for x in seqs])
    mask = torch.tensor([[0] * (width - len(x)) + [1] * len(x) for x in seqs])
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=new, do_sample=False,
                             pad_token_id=pad)
    return out[:, width:].tolist()


def test_a_later_turn_encodes_only_what_is_new_and_answers_as_re_encoding_does(
    harness_modules: Path, tiny_policy: Path
) -> None:
    from harness.swe.turn_cache import TurnCache

    model, tok = _model(tiny_policy)
    pad, new = tok.pad_token_id, 6
    first = [tok(t, add_special_tokens=False)["input_ids"] for t in
             ["fix the bug in calc.py please", "a much longer statement of a failing test and its output", "ls"]]
    turns = TurnCache()
    with torch.no_grad():
        replies = turns.generate(model, first, [10, 11, 12], pad, max_new_tokens=new, do_sample=False)
    assert replies == _plain(model, first, pad, new)
    assert turns.reused_tokens == 0, "a first turn has nothing to reuse"

    # The next turn: episode 11 first, then 10 (slots swap), 12 has ended, 13 is new and short.
    observation = tok("\nobservation: 2 failed", add_special_tokens=False)["input_ids"]
    second = [first[1] + replies[1] + observation, first[0] + replies[0] + observation, first[2][:1]]
    with torch.no_grad():
        again = turns.generate(model, second, [11, 10, 13], pad, max_new_tokens=new, do_sample=False)
    assert again == _plain(model, second, pad, new), "the same greedy tokens as re-encoding every turn"
    # The longest row (episode 11) encodes its reply's last token and the observation, and no more.
    encoded_11 = 1 + len(observation)
    assert turns.reused_tokens >= len(second[0]) - encoded_11
    assert turns.reused_tokens <= sum(len(x) for x in second[:2]) - 2
    assert turns.prompt_tokens == sum(map(len, first)) + sum(map(len, second))


def _rollout(tasks: dict[str, Any], task: dict[str, Any], model: Any, tok: Any, keep: bool) -> dict[str, Any]:
    from harness.config import load_config
    from harness.swe.prompts import build_messages
    from harness.swe.rollout_func import make_rollout_func

    raw = yaml.safe_load(Path("harness.yaml").read_text())
    raw.setdefault("domain_settings", {})["turn_cache"] = keep
    Path("harness.yaml").write_text(yaml.safe_dump(raw))
    trainer: Any = SimpleNamespace(processing_class=tok, model=model, eos_token_ids=[tok.eos_token_id],
                                   accelerator=SimpleNamespace(unwrap_model=lambda m: m))
    torch.manual_seed(0)
    return make_rollout_func(load_config(), tasks)([build_messages(task)] * 3, trainer)


def test_episodes_sampled_with_the_kept_cache_are_those_sampled_by_re_encoding(
    harness_modules: Path, train_tasks: Path, tiny_policy: Path
) -> None:
    from harness.io import read_tasks

    tasks = {t["id"]: t for t in read_tasks(train_tasks)}
    task = next(iter(tasks.values()))
    model, tok = _model(tiny_policy)

    kept = _rollout(tasks, task, model, tok, keep=True)
    re_encoded = _rollout(tasks, task, model, tok, keep=False)
    assert [e["turns"] for e in kept["episode"]] == [3, 3, 3], "every episode ran all its turns"
    assert kept["completion_ids"] == re_encoded["completion_ids"]
    assert kept["env_mask"] == re_encoded["env_mask"]
    assert [e["transcript"] for e in kept["episode"]] == [e["transcript"] for e in re_encoded["episode"]]


def test_a_model_with_a_sliding_window_is_re_encoded_every_turn(harness_modules: Path) -> None:
    """A sliding-window cache keeps only the window's positions, so rows cannot be sliced out by position:
    the cache steps aside and the answers are re-encoding's."""
    from transformers import MistralConfig, MistralForCausalLM

    from harness.swe.turn_cache import TurnCache

    torch.manual_seed(0)
    model = MistralForCausalLM(MistralConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                             num_attention_heads=4, num_key_value_heads=2, sliding_window=4,
                                             pad_token_id=0, eos_token_id=1, bos_token_id=2)).eval()
    turns = TurnCache()
    first = [[5, 6, 7, 8, 9, 10], [11, 12, 13]]
    with torch.no_grad():
        replies = turns.generate(model, first, [1, 2], 0, max_new_tokens=5, do_sample=False)
        second = [x + r + [20, 21] for x, r in zip(first, replies, strict=True)]
        again = turns.generate(model, second, [1, 2], 0, max_new_tokens=5, do_sample=False)
    assert again == _plain(model, second, 0, 5)
    assert turns.reused_tokens == 0
