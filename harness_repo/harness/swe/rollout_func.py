"""Multi-turn episodes for TRL's GRPOTrainer (its `rollout_func` hook).

For every prompt TRL hands over (one row per completion, groups of `num_generations`), run one
episode: generate an assistant turn with the policy, run its command in the episode's checkout,
append the observation, repeat until `submit`, the turn cap or the token cap. The completion
TRL trains on is the whole episode; `env_mask` marks observation tokens 0 so the loss covers
policy tokens only. Each turn is generated from the exact token sequence built so far (no
re-tokenising of earlier turns), so the tokens scored are the tokens sampled.
"""

from __future__ import annotations

import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from harness.config import HarnessConfig
from harness.sampling import fast_categorical
from harness.swe import agent, remote, repo
from harness.swe.prompts import task_id_of
from harness.swe.settings import AgentSettings, agent_settings
from harness.swe.turn_cache import TurnCache, left_padded

MAX_PARALLEL_COMMANDS = 8
"""Commands of image episodes in flight at once (each runs in its own container on meta-agent's side)."""


@dataclass
class Episode:
    task: dict[str, Any]
    workdir: Path | None
    """The episode's checkout here; None when it runs in its task's image (then `remote` names it)."""
    prompt_ids: list[int]
    remote: str | None = None
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    transcript: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    exit_codes: list[int] = field(default_factory=list)
    no_command_turns: int = 0
    turns: int = 0
    end_reason: str = ""
    last_turn_ended: bool = True

    @property
    def done(self) -> bool:
        return bool(self.end_reason)

    def record(self, diff: str) -> dict[str, Any]:
        return {
            "transcript": "\n".join(self.transcript),
            "diff": diff,
            "commands": self.commands,
            "exit_codes": self.exit_codes,
            "no_command_turns": self.no_command_turns,
            "turns": self.turns,
            "end_reason": self.end_reason,
            "policy_tokens": sum(self.env_mask),
            "truncated": self.end_reason != "submit",
        }


class ObservationWrapper:
    """Turns observation text into the chat template's tokens for a user turn followed by the
    assistant generation prompt, derived from the tokenizer's own template."""

    MARK = "\x00OBS\x00"

    def __init__(self, tokenizer: Any) -> None:
        self.tok = tokenizer
        base = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
                {"role": "assistant", "content": "A"}]
        with_obs = tokenizer.apply_chat_template([*base, {"role": "user", "content": self.MARK}], tokenize=False,
                                                 add_generation_prompt=True)
        upto_answer = with_obs.index("A", with_obs.index("u")) + 1
        segment = with_obs[upto_answer:]  # e.g. "<|im_end|>\n<|im_start|>user\nOBS<|im_end|>\n<|im_start|>assistant\n"
        self.prefix, self.suffix = segment.split(self.MARK)
        self.eos_text = tokenizer.eos_token or ""

    def ids(self, text: str, turn_ended: bool) -> list[int]:
        prefix = self.prefix
        if turn_ended and self.eos_text and prefix.startswith(self.eos_text):
            prefix = prefix[len(self.eos_text):]  # the policy already emitted the end-of-turn token
        return list(self.tok(prefix + text + self.suffix, add_special_tokens=False)["input_ids"])


def _generate(model: Any, tok: Any, batch: list[Episode], cfg: HarnessConfig, s: AgentSettings,
              eos_ids: set[int], bf16: bool, fast: bool, turns: TurnCache | None) -> list[list[int]]:
    """One sampled turn for every active episode (left-padded batch); each reply cut after its end token.
    `fast`: draw tokens by inverse CDF (harness/sampling.py), as the merged sampler does. `turns`: reuse
    each episode's keys and values from its last turn (harness/swe/turn_cache.py); None re-encodes it."""
    seqs = [e.prompt_ids + e.completion_ids for e in batch]
    pad = tok.pad_token_id
    sampling = {"max_new_tokens": s.turn_tokens, "do_sample": True, "temperature": cfg.rl.temperature,
                "top_p": cfg.rl.top_p}
    # Sample in the precision training runs in (TRL's own generation does too): on CPUs with fast bf16
    # matmuls this is where a multi-turn step spends half its time.
    with torch.no_grad(), torch.autocast(model.device.type, dtype=torch.bfloat16, enabled=bf16), \
            fast_categorical(fast):
        if turns is not None:
            rows = turns.generate(model, seqs, [id(e) for e in batch], pad, **sampling)
        else:
            ids, mask = left_padded(seqs, pad, model.device)
            out = model.generate(input_ids=ids, attention_mask=mask, pad_token_id=pad, **sampling)
            rows = out[:, ids.shape[1]:].tolist()
    trimmed = []
    for row in rows:
        cut = next((i + 1 for i, t in enumerate(row) if t in eos_ids), len(row))
        trimmed.append(row[:cut])
    return trimmed


def make_rollout_func(cfg: HarnessConfig, tasks: dict[str, dict[str, Any]]) -> Any:
    s = agent_settings(cfg)

    def rollout_func(prompts: list[list[dict[str, str]]], trainer: Any) -> dict[str, Any]:
        tok = trainer.processing_class
        merged = getattr(trainer, "merged", None)  # rl.generation merged: sample with the merged copy
        model = merged.sync() if merged is not None else trainer.accelerator.unwrap_model(trainer.model)
        bf16 = merged is None and bool(getattr(getattr(trainer, "args", None), "bf16", False))
        wrapper = ObservationWrapper(tok)
        eos_ids = set(trainer.eos_token_ids)
        scratch = Path(tempfile.mkdtemp(prefix="episodes-"))
        episodes: list[Episode] = []
        try:
            for i, messages in enumerate(prompts):
                task = tasks[task_id_of(messages)]
                text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
                prompt_ids = list(tok(text, add_special_tokens=False)["input_ids"])
                workdir = None if remote.in_image(task) else repo.checkout(task, Path(task["tasks_dir"]),
                                                                                scratch / f"e{i}")
                episodes.append(Episode(task=task, workdir=workdir, prompt_ids=prompt_ids))
            _open_remote([e for e in episodes if e.workdir is None])
            was_training = model.training
            model.eval()
            turns = TurnCache() if s.turn_cache else None
            try:
                for turn in range(s.max_turns):
                    active = [e for e in episodes if not e.done]
                    if not active:
                        break
                    replies = _generate(model, tok, active, cfg, s, eos_ids, bf16, fast=merged is not None,
                                        turns=turns)
                    _steps(active, replies, turn, s, wrapper, eos_ids, tok)
            finally:
                model.train(was_training)
            records = [e.record(_final_diff(e)) for e in episodes]
        finally:
            for e in episodes:
                if e.remote is not None:
                    remote.close(e.remote)
            shutil.rmtree(scratch, ignore_errors=True)
        return {
            "prompt_ids": [e.prompt_ids for e in episodes],
            "completion_ids": [e.completion_ids for e in episodes],
            "logprobs": None,
            "env_mask": [e.env_mask for e in episodes],
            "episode": records,
        }

    return rollout_func


def _open_remote(batch: list[Episode]) -> None:
    """Start the episodes that run in their task's image, side by side (a container each)."""
    if batch:
        with ThreadPoolExecutor(max_workers=min(len(batch), MAX_PARALLEL_COMMANDS)) as pool:
            for e, episode_id in zip(batch, pool.map(lambda e: remote.open_episode(e.task), batch), strict=True):
                e.remote = episode_id


def _final_diff(e: Episode) -> str:
    if e.remote is not None:
        return remote.diff(e.remote)
    assert e.workdir is not None
    return repo.diff(e.workdir)


def _run(e: Episode, command: str, s: AgentSettings) -> tuple[int, str]:
    if e.remote is not None:
        return remote.run(e.remote, command, s.command_timeout_s, s.observation_chars)
    assert e.workdir is not None
    return agent.run_command(command, e.workdir, s.command_timeout_s, s.observation_chars)


def _steps(batch: list[Episode], replies: list[list[int]], turn: int, s: AgentSettings,
           wrapper: ObservationWrapper, eos_ids: set[int], tok: Any) -> None:
    """One generated turn of each episode. The commands of episodes in their images run side by side (the
    episode server runs each in its own container); the others run one after another here."""
    commands = [(e, _reply(e, new, eos_ids, tok)) for e, new in zip(batch, replies, strict=True)]
    remote_todo = [(e, c) for e, c in commands if e.remote is not None and c not in (None, agent.SUBMIT)]
    ran: dict[int, tuple[int, str]] = {}
    if remote_todo:
        with ThreadPoolExecutor(max_workers=min(len(remote_todo), MAX_PARALLEL_COMMANDS)) as pool:
            results = pool.map(lambda pair: _run(pair[0], str(pair[1]), s), remote_todo)
            ran = {id(e): result for (e, _c), result in zip(remote_todo, results, strict=True)}
    for e, command in commands:
        if command == agent.SUBMIT:
            e.end_reason = "submit"
            continue
        if command is None:
            e.no_command_turns += 1
            _append_observation(e, agent.NO_COMMAND, turn, s, wrapper)
            continue
        code, output = ran[id(e)] if id(e) in ran else _run(e, command, s)
        e.commands.append(command)
        e.exit_codes.append(code)
        _append_observation(e, agent.observation(code, output), turn, s, wrapper)


def _reply(e: Episode, new: list[int], eos_ids: set[int], tok: Any) -> str | None:
    """Record a generated turn; its command (agent.SUBMIT for a submit), or None when it holds none."""
    e.completion_ids += new
    e.env_mask += [1] * len(new)
    e.turns += 1
    e.last_turn_ended = bool(new) and new[-1] in eos_ids
    reply = tok.decode(new, skip_special_tokens=True)
    e.transcript.append(f"[assistant]\n{reply}")
    command = agent.parse_command(reply)
    return agent.SUBMIT if command is not None and command.strip() == agent.SUBMIT else command


def _append_observation(e: Episode, obs: str, turn: int, s: AgentSettings, wrapper: ObservationWrapper) -> None:
    e.transcript.append(f"[observation]\n{obs}")
    if turn + 1 >= s.max_turns:
        e.end_reason = "turn_cap"
        return
    obs_ids = wrapper.ids(obs, e.last_turn_ended)
    e.completion_ids += obs_ids
    e.env_mask += [0] * len(obs_ids)
