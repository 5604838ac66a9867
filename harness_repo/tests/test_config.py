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
