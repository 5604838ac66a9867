"""A warm start on the train split's own fixes: demonstrations a policy could follow, and SFT before GRPO.

A user who turns on `warm_start` expects: demonstrations that explore the way a policy must (the fix's
location is never given away by the task), whose edits really make the gold fix; only train tasks carry
them; and training that starts GRPO from the fine-tuned policy.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from meta_agent.domains.swe import SweDomain, SweSettings
from meta_agent.swe.checkout import checkout

pytestmark = pytest.mark.slow  # trains a model: not in `make test-fast`


@pytest.fixture
def harness_work(harness_modules: Path) -> Path:
    """The exported SWE harness (conftest.py), its agent given the sealed protocol's turns and a warm start."""
    _with_warm_start(harness_modules, steps=1)
    return harness_modules


def _with_warm_start(work: Path, steps: int, **more: float) -> None:
    path = work / "harness.yaml"
    cfg = yaml.safe_load(path.read_text())
    cfg["warm_start"] = {"steps": steps, "batch_size": 2, "max_demos": 3, **more}
    cfg["domain_settings"].update({"max_turns": 6, "turn_tokens": 128})
    path.write_text(yaml.safe_dump(cfg))


def test_only_train_tasks_carry_their_fix(calc_taskset: str, tmp_path: Path) -> None:
    domain = SweDomain(SweSettings(taskset=calc_taskset, sandbox="bwrap"))
    train = domain.export_train(tmp_path / "inputs")
    assert train and all(t.metadata["demonstration"]["edits"] for t in train)
    for split in ("selection", "test"):
        assert all("demonstration" not in t.metadata and "gold_files" not in t.metadata
                   for t in domain.tasks(split))


def test_demonstrations_explore_then_make_the_gold_fix(harness_work: Path, train_tasks: Path, calc_taskset: str,
                                                       tmp_path: Path) -> None:
    from harness.config import load_config
    from harness.io import read_tasks
    from harness.swe import repo
    from harness.swe.demonstrations import act_out
    from harness.swe.settings import agent_settings

    settings = agent_settings(load_config())
    by_id = {i.instance_id: i for i in SweDomain(SweSettings(taskset=calc_taskset)).instances("train")}
    for task in read_tasks(train_tasks):
        work = repo.checkout(task, Path(task["tasks_dir"]), tmp_path / "acted" / task["id"])
        conv = act_out(task, task["metadata"]["demonstration"], work, settings, lambda reply: True)
        assert conv is not None, task["id"]
        replies = [m["content"] for m in conv if m["role"] == "assistant"]
        assert replies[0].startswith("```bash\ngrep -rn") and "cat -n" in replies[1]
        assert replies[-1] == "```bash\nsubmit\n```" and len(replies) <= settings.max_turns
        # the search's output leads to the listing, and the listing shows the line the edit names
        inst = by_id[task["id"]]
        assert inst.mutation is not None and inst.mutation.function
        listing = max(i for i, m in enumerate(conv) if m["role"] == "assistant" and "cat -n" in m["content"]) + 1
        assert f"{inst.mutation.line}\t" in conv[listing]["content"]
        # the edits make exactly the gold fix
        gold = checkout(inst, tmp_path / "gold" / task["id"])
        buggy = (gold / inst.mutation.file).read_text()
        assert repo.apply(gold, inst.patch)[0]
        fixed = (work / inst.mutation.file).read_text()
        assert fixed == (gold / inst.mutation.file).read_text() != buggy


def test_a_demonstration_that_does_not_fit_a_turn_is_left_out(harness_work: Path, train_tasks: Path) -> None:
    from harness.config import load_config
    from harness.io import read_tasks
    from harness.swe.demonstrations import demonstrations

    tasks = read_tasks(train_tasks)
    cfg = load_config()
    assert len(demonstrations(cfg, tasks, lambda r: True, limit=2)) == 2
    assert demonstrations(cfg, tasks, lambda r: "grep" not in r, limit=2) == []  # its first turn never fits


def _nll(model: Any, ids: list[int], mask: list[int]) -> float:
    """Summed next-token loss over the tokens the mask marks (as TRL's labels mark them)."""
    import torch

    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0, :-1].float()
    per_token = torch.nn.functional.cross_entropy(logits, torch.tensor(ids[1:]), reduction="none")
    return float((per_token * torch.tensor(mask[1:], dtype=torch.float32)).sum())


def test_a_demonstration_trains_as_one_example_with_its_turns_loss(harness_work: Path, train_tasks: Path,
                                                                   tiny_policy: Path) -> None:
    """One example per demonstration costs a third of one per turn; a user must get the same training
    signal: every reply in the loss, each seen after exactly the conversation it followed."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from harness.config import load_config
    from harness.io import read_tasks
    from harness.swe.demonstrations import demonstrations
    from harness.warm_start import training_examples

    tok = AutoTokenizer.from_pretrained(tiny_policy)
    model = AutoModelForCausalLM.from_pretrained(tiny_policy).eval()
    convs = demonstrations(load_config(), read_tasks(train_tasks), lambda r: True, limit=2)
    examples = training_examples(tok, convs)
    assert len(convs) == 2 and len(examples) == 2
    for conv, ex in zip(convs, examples, strict=True):
        replies = [m["content"] for m in conv if m["role"] == "assistant"]
        assert ex["turns"] == len(replies) >= 3
        learned = tok.decode([t for t, m in zip(ex["input_ids"], ex["completion_mask"], strict=True) if m])
        assert all(r in learned for r in replies)  # the replies, in the loss ...
        assert not any(m["content"][:40] in learned for m in conv if m["role"] != "assistant")  # ... and nothing else
        # the old way: one prompt-completion example per turn, split as TRL splits them
        per_turn = 0.0
        for i, m in enumerate(conv):
            if m["role"] != "assistant":
                continue
            prompt = tok(tok.apply_chat_template(conv[:i], tokenize=False, add_generation_prompt=True),
                         add_special_tokens=False)["input_ids"]
            whole = tok(tok.apply_chat_template(conv[: i + 1], tokenize=False), add_special_tokens=False)["input_ids"]
            assert whole[: len(prompt)] == prompt
            per_turn += _nll(model, whole, [0] * len(prompt) + [1] * (len(whole) - len(prompt)))
        assert _nll(model, ex["input_ids"], ex["completion_mask"]) == pytest.approx(per_turn, rel=1e-4)


def test_a_template_that_rewrites_earlier_turns_trains_turn_by_turn(tiny_policy: Path, harness_work: Path) -> None:
    """Some chat templates render an earlier assistant turn differently once later turns follow (dropping
    its reasoning, say): in one example its reply would be learned in a context the policy never sees."""
    from transformers import AutoTokenizer

    from harness.warm_start import training_examples

    tok = AutoTokenizer.from_pretrained(tiny_policy)
    tok.chat_template = (
        "{% for m in messages %}{% if m.role == 'assistant' and not loop.last %}<|im_start|>assistant\n(earlier)"
        "<|im_end|>\n{% else %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endif %}{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    conv = [{"role": "system", "content": "fix it"}, {"role": "user", "content": "the bug"},
            {"role": "assistant", "content": "ls"}, {"role": "user", "content": "a.py"},
            {"role": "assistant", "content": "submit"}]
    examples = training_examples(tok, [conv])
    assert [e["turns"] for e in examples] == [1, 1]
    learned = [tok.decode([t for t, m in zip(e["input_ids"], e["completion_mask"], strict=True) if m])
               for e in examples]
    assert learned[0].startswith("ls<|im_end|>") and learned[1].startswith("submit<|im_end|>")
    assert "(earlier)" in tok.decode(examples[1]["input_ids"])  # the context the template gives the second turn
    # with the stock template the same conversation is one example; longer than the examples' cap, one per turn
    stock = AutoTokenizer.from_pretrained(tiny_policy)
    assert [e["turns"] for e in training_examples(stock, [conv])] == [2]
    whole = len(training_examples(stock, [conv])[0]["input_ids"])
    assert [e["turns"] for e in training_examples(stock, [conv], max_length=whole - 1)] == [1, 1]
    assert [e["turns"] for e in training_examples(stock, [conv], max_length=whole)] == [2]


def test_training_starts_grpo_from_the_warm_started_policy(harness_work: Path, train_tasks: Path,
                                                           tiny_policy: Path, tmp_path: Path) -> None:
    # its own process, as meta-agent runs it: training patches TRL's log-prob head for the whole process
    # 10 steps asked, but at most 2 passes over the 3 demonstrations made, 2 a step: 3 steps
    _with_warm_start(harness_work, steps=10, passes=2)
    out = tmp_path / "out"
    subprocess.run([sys.executable, "-m", "harness", "train", "--policy", str(tiny_policy), "--steps", "1",
                    "--out", str(out), "--tasks", str(train_tasks)], cwd=harness_work, check=True, timeout=900,
                   env={**os.environ, "PYTHONPATH": str(harness_work)})

    report = json.loads((out / "warm_start.json").read_text())
    assert report["demonstrations"] == 3 == report["examples"] and report["turns"] >= 3 * 3
    assert report["steps"] == 3 == report["planned_steps"] and len(report["loss"]) == 3
    # GRPO ran on top (one step) and saved the adapter both phases trained
    assert sum(1 for line in (out / "metrics.jsonl").read_text().splitlines() if line.strip()) == 1
    assert any(out.glob("**/adapter_model.safetensors"))
