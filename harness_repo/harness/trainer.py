"""TRL's GRPOTrainer with this harness's scoring, rollout filters and rollout records.

One harness reward function computes every component (harness/scoring.py), so TRL
sees their weighted sum; the filters then drop or down-weight rollouts before the
loss, and every rollout of the step is written to rollouts.jsonl.
"""

from __future__ import annotations

import time
from typing import Any

import torch
from transformers import TrainerCallback
from trl import GRPOTrainer

from harness import zero_advantage
from harness.config import HarnessConfig
from harness.domain import DomainModule
from harness.io import JsonlAppender, harness_commit, rollout_record
from harness.lm_head import score_completion_rows_only
from harness.merged_policy import MergedPolicy
from harness.rollout import Rollout, Scored
from harness.sampling import fast_categorical
from harness.scoring import score_batch
from harness.shared_prefix import shared_prefix_logps


def _text(message: Any) -> str:
    """Completion or prompt text from TRL's conversational or plain format."""
    if isinstance(message, list):
        return str(message[-1]["content"]) if message else ""
    return str(message)


class HarnessScorer:
    """The single reward function TRL calls; keeps the scored batch for the trainer."""

    __name__ = "harness_reward"

    def __init__(self, domain: DomainModule, cfg: HarnessConfig, tasks: dict[str, dict[str, Any]]) -> None:
        self.domain, self.cfg, self.tasks = domain, cfg, tasks
        self.eos_ids: set[int] = set()
        self.pending: list[Scored] = []

    def __call__(
        self, prompts: list[Any], completions: list[Any], completion_ids: list[list[int]], **kw: Any
    ) -> list[float]:
        step = kw["trainer_state"].global_step + 1  # the optimizer step these rollouts feed
        g = self.cfg.rl.num_generations
        episodes = kw.get("episode")  # multi-turn domains: what their rollout function recorded
        rollouts = []
        for i, (prompt, completion, ids) in enumerate(zip(prompts, completions, completion_ids, strict=True)):
            group = i // g
            episode = episodes[i] if episodes else None
            rollouts.append(
                Rollout(
                    rollout_id=f"s{step}-g{group}-{i % g}",
                    task=self.tasks[kw["task_id"][i]],
                    prompt=_text(prompt),
                    completion=episode["transcript"] if episode else _text(completion),
                    completion_tokens=episode["policy_tokens"] if episode else len(ids),
                    truncated=episode["truncated"] if episode else (not ids or ids[-1] not in self.eos_ids),
                    group_id=f"s{step}-g{group}",
                    max_completion_length=self.cfg.rl.max_completion_length,
                    extra={k: v for k, v in episode.items() if k != "transcript"} if episode else {},
                    settings=self.cfg.domain_settings,
                )
            )
        self.pending = score_batch(self.domain, self.cfg, rollouts)
        return [s.reward for s in self.pending]


def weight_advantages(out: dict[str, Any], weights: list[float]) -> torch.Tensor:
    """Scale TRL's advantages by the filters' per-rollout weights and leave weight-0 rollouts out of the loss.
    The weights are made where TRL's tensors are: on a GPU run that is the GPU, and a CPU tensor there
    stopped the first step ("Expected all tensors to be on the same device")."""
    adv = out["advantages"]
    w = torch.tensor(weights, dtype=adv.dtype, device=adv.device)
    out["advantages"] = adv * w
    keep = (w > 0).to(out["completion_mask"].dtype).unsqueeze(1)
    out["completion_mask"] = out["completion_mask"] * keep
    loss_mask = out["completion_mask"] * out.get("tool_mask", 1)
    out["num_items_in_batch"] = loss_mask.sum()
    return w


class HarnessGRPOTrainer(GRPOTrainer):
    def __init__(self, *args: Any, scorer: HarnessScorer, rollouts_out: JsonlAppender,
                 merged_dtype: torch.dtype | None = None, shared_prefix: bool = True,
                 skip_zero_advantage: bool = True, **kw: Any) -> None:
        score_completion_rows_only()
        super().__init__(*args, reward_funcs=[scorer], **kw)
        self.scorer = scorer
        self.scorer.eos_ids = set(self.eos_token_ids) | {self._tokenizer.pad_token_id}
        self.rollouts_out = rollouts_out
        self.shared_prefix = shared_prefix
        self.skip_zero_advantage = skip_zero_advantage
        self.still: torch.Tensor | None = None  # set by _compute_loss for the learner's forward it calls
        self.kept_frac: list[float] = []
        # rl.generation: merged samples with a merged copy of the policy (harness/merged_policy.py)
        self.merged = (MergedPolicy(self.accelerator.unwrap_model(self.model), merged_dtype)
                       if merged_dtype is not None and not self.use_vllm else None)

    def _generate_single_turn(self, prompt_ids: Any, images: Any, multimodal_fields: Any, num_generations: int,
                              has_tool_images: bool = False) -> Any:
        """TRL's own generation, with the merged copy standing in for the trained model while it samples
        and each token drawn by inverse CDF (harness/sampling.py)."""
        plain = self.merged is None or self.use_transformers_continuous_batching or images or multimodal_fields
        if plain:
            return super()._generate_single_turn(prompt_ids, images, multimodal_fields, num_generations,
                                                 has_tool_images)
        trained = self.model_wrapped
        self.model_wrapped = self.merged.sync()
        try:
            with fast_categorical():  # the same distribution, drawn in 0.2 ms a token instead of ~9 on a CPU
                return super()._generate_single_turn(prompt_ids, images, multimodal_fields, num_generations,
                                                     has_tool_images)
        finally:
            self.model_wrapped = trained

    def _get_per_token_logps_and_entropies(self, model: Any, input_ids: torch.Tensor,
                                           attention_mask: torch.Tensor, logits_to_keep: int,
                                           batch_size: int | None = None, compute_entropy: bool = False,
                                           compute_aux_loss: bool = False, **extra: Any) -> Any:
        """TRL's learner log-probs, with each group's prompt encoded once where the batch allows it
        (harness/shared_prefix.py); TRL's own path otherwise. Inside `_compute_loss`, the rows it marked
        still run without autograd (harness/zero_advantage.py)."""
        text_only = not compute_aux_loss and all(v is None for v in extra.values())
        still, self.still = self.still, None
        if still is not None and text_only and still.numel() == input_ids.size(0):
            def forward(ids: torch.Tensor, mask: torch.Tensor) -> Any:
                return self._get_per_token_logps_and_entropies(model, ids, mask, logits_to_keep, batch_size=batch_size,
                                                               compute_entropy=compute_entropy)
            return zero_advantage.split_forward(forward, still, input_ids, attention_mask)
        if not self.shared_prefix or not text_only:
            return super()._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, batch_size=batch_size,
                compute_entropy=compute_entropy, compute_aux_loss=compute_aux_loss, **extra)
        size = batch_size or input_ids.size(0)
        logps, entropies = [], []
        for i in range(0, input_ids.size(0), size):
            ids, mask = input_ids[i:i + size], attention_mask[i:i + size]
            part = shared_prefix_logps(model, ids, mask, logits_to_keep, compute_entropy, self.accelerator.autocast())
            if part is None:
                plain = super()._get_per_token_logps_and_entropies(model, ids, mask, logits_to_keep,
                                                                   compute_entropy=compute_entropy)
                part = plain[0], plain[1]
            logps.append(part[0])
            entropies.append(part[1])
        return torch.cat(logps), (torch.cat(entropies) if compute_entropy else None), None

    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> torch.Tensor:
        """TRL's loss, with the rows that cannot move the weights through the learner without autograd
        (harness/zero_advantage.py)."""
        still = zero_advantage.still_rows(self, inputs) if self.skip_zero_advantage else None
        if still is None or not bool(still.any()):
            return super()._compute_loss(model, inputs)
        self.still = still
        try:
            loss = super()._compute_loss(model, inputs)
        finally:
            self.still = None
        return loss + zero_advantage.zero_loss(model) if bool(still.all()) else loss

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = super()._generate_and_score_completions(inputs)
        scored = self.scorer.pending
        weights = weight_advantages(out, [s.weight for s in scored])
        self.kept_frac.append(float((weights > 0).float().mean()))
        prompt_lens = out["prompt_mask"].sum(dim=1).tolist()
        for s, plen in zip(scored, prompt_lens, strict=True):
            r = s.rollout
            self.rollouts_out.write(
                rollout_record(
                    rollout_id=r.rollout_id, step=self.state.global_step + 1, task_id=r.task["id"],
                    group_id=r.group_id, prompt=r.prompt, completion=r.completion, rewards=s.rewards,
                    reward=s.reward, advantage=s.advantage, weight=s.weight, prompt_tokens=int(plen),
                    completion_tokens=r.completion_tokens, truncated=r.truncated, labels=s.labels,
                    harness_commit=harness_commit(), extra=r.extra,
                )
            )
        self.rollouts_out.flush()
        return out


class MetricsCallback(TrainerCallback):
    """Turns TRL's per-step log into metrics.jsonl records (see meta-agent's contract)."""

    def __init__(self, sink: JsonlAppender, trainer_ref: list[HarnessGRPOTrainer], progress: bool) -> None:
        self.sink, self.trainer_ref, self.progress = sink, trainer_ref, progress
        self.last = time.monotonic()

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any) -> None:
        if not logs or "reward" not in logs:
            return
        now = time.monotonic()
        kept = self.trainer_ref[0].kept_frac
        record = {
            "step": int(state.global_step),
            "reward_mean": logs.get("reward"),
            "reward_std": logs.get("reward_std"),
            "kl": logs.get("kl"),
            "entropy": logs.get("entropy"),
            "completion_length_mean": logs.get("completions/mean_length"),
            "truncation_rate": logs.get("completions/clipped_ratio"),
            "zero_variance_frac": logs.get("frac_reward_zero_std"),
            "clip_ratio": logs.get("clip_ratio/region_mean"),
            "kept_frac": sum(kept) / len(kept) if kept else None,
            "loss": logs.get("loss"),
            "learning_rate": logs.get("learning_rate"),
            "wall_time": now - self.last,
        }
        kept.clear()
        self.last = now
        self.sink.write(record)
        self.sink.flush()
        if self.progress:
            print(
                f"step {record['step']}/{state.max_steps} reward={record['reward_mean'] or 0:.3f} "
                f"len={record['completion_length_mean'] or 0:.1f} {record['wall_time']:.1f}s",
                flush=True,
            )
