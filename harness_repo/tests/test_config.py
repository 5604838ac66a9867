from pathlib import Path

import pytest

from harness.config import ConfigError, load_config


def test_repo_config_is_valid() -> None:
    cfg = load_config()
    assert cfg.rl.num_generations >= 2


def test_bad_value_names_field_and_allowed_values(tmp_path: Path) -> None:
    bad = tmp_path / "harness.yaml"
    bad.write_text("domain: math\nrl:\n  loss_type: magic\n")
    with pytest.raises(ConfigError, match=r"rl\.loss_type.*grpo"):
        load_config(bad)


def test_vllm_generation_is_checked_before_anything_loads(tmp_path: Path) -> None:
    from harness.config import generation_problem

    path = tmp_path / "harness.yaml"
    path.write_text("domain: math\nrl:\n  generation: vllm\n")
    cfg = load_config(path)
    assert generation_problem(cfg, cuda=True, vllm_installed=True) is None
    assert "a CUDA GPU" in (generation_problem(cfg, cuda=False, vllm_installed=True) or "")
    assert "vLLM" in (generation_problem(cfg, cuda=True, vllm_installed=False) or "")
    path.write_text("domain: swe\nrl:\n  generation: vllm\n")
    with pytest.raises(ConfigError, match="math and code only"):
        load_config(path)
