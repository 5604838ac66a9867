"""The sealed math evaluator's greedy throughput through HF `generate` (bench/gpu_path.py's evaluation
rows): plain (dynamic cache), static KV cache, and static cache + torch.compile, each fast path's greedy
token ids compared with the plain path's at the same dtype and batch size."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import torch

from bench.gpu_lib.common import SectionResults, log, sync


def encode_all(tok: Any, convs: list[Any], device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """All prompts left-padded to one length, as the evaluator's tokenizer pads (padding_side left): one
    prompt length for every batch, so the static cache (and its compiled step) keeps one shape."""
    tok.padding_side = "left"
    texts = [tok.apply_chat_template(c, tokenize=False, add_generation_prompt=True) for c in convs]
    enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    return enc["input_ids"].to(device), enc["attention_mask"].to(device)


def generate_all(model: Any, tok: Any, ids: torch.Tensor, mask: torch.Tensor, batch: int, max_new: int,
                 path: str) -> torch.Tensor:
    kw: dict[str, Any] = {"max_new_tokens": max_new, "min_new_tokens": max_new, "do_sample": False,
                          "pad_token_id": tok.pad_token_id, "temperature": None, "top_p": None, "top_k": None}
    if path == "static":
        kw.update(cache_implementation="static", disable_compile=True)
    elif path == "static+compile":
        kw.update(cache_implementation="static", disable_compile=False)
    outs = []
    with torch.inference_mode():
        for s in range(0, ids.shape[0], batch):
            gen = model.generate(input_ids=ids[s:s + batch], attention_mask=mask[s:s + batch], **kw)
            outs.append(gen[:, ids.shape[1]:])
    return torch.cat(outs)


def eval_rows(res: SectionResults, model_dir: Path, tok: Any, prompts: dict[str, Any], *, device: str, dtype: str,
              paths: list[str], batches: list[int], n_prompts: int, max_new: int, deadline: float,
              plain_ref: dict[tuple[str, int], torch.Tensor]) -> None:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(
        str(model_dir), dtype=torch.float32 if dtype == "fp32" else torch.bfloat16).to(device).eval()
    convs = (prompts["eval"] * ((n_prompts + len(prompts["eval"]) - 1) // len(prompts["eval"])))[:n_prompts]
    ids, mask = encode_all(tok, convs, device)
    for path in paths:
        for bs in batches:
            if time.monotonic() > deadline:
                res.data["notes"].append(f"eval {dtype} {path} bs{bs} skipped: time budget spent")
                log(f"eval {dtype} {path} bs{bs}: skipped (deadline)")
                continue
            try:
                sync(device)
                s = time.perf_counter()
                generate_all(model, tok, ids[:bs], mask[:bs], bs, max_new, path)  # warm-up / compile
                sync(device)
                first = time.perf_counter() - s
                s = time.perf_counter()
                out = generate_all(model, tok, ids, mask, bs, max_new, path)
                sync(device)
                wall = time.perf_counter() - s
                if path == "plain":
                    plain_ref[(dtype, bs)] = out.cpu()
                    differ = 0
                else:
                    ref = plain_ref.get((dtype, bs))
                    differ = None if ref is None else int((ref != out.cpu()).any(dim=1).sum())
                base = next((r for r in res.data["eval"] if r["dtype"] == dtype and r["path"] == "plain"
                             and r["batch_size"] == bs), None)
                gen_tokens = int(out.numel())
                row = {"dtype": dtype, "path": path, "batch_size": bs, "prompts": n_prompts,
                       "prompt_len_padded": int(ids.shape[1]), "max_new_tokens": max_new,
                       "generated_tokens": gen_tokens, "timed_s": wall, "first_call_s": first,
                       "prompts_per_s": n_prompts / wall, "tokens_per_s": gen_tokens / wall,
                       "differ_vs_plain": differ,
                       "speedup_vs_plain": base["timed_s"] / wall if base else 1.0}
                res.data["eval"].append(row)
                log(f"eval {dtype} {path} bs{bs}: {n_prompts / wall:.1f} prompts/s, {gen_tokens / wall:.0f} tok/s, "
                    f"first call {first:.1f}s, differing from plain: {differ}")
                res.save()
            except Exception:
                res.error(f"eval {dtype} {path} bs{bs}")
    del model
    if device == "cuda":
        torch.cuda.empty_cache()

