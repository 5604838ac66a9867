"""Task domains: task sources and splits, the sealed verifier, the fixed evaluation protocol.

`DOMAINS` is the one list of domains: their implementation, settings model, default training
steps and the harness module they train with. Nothing here imports an implementation, so the
config and the CLI stay fast. A domain defined outside the package is named `module:Class`; its
class carries the same facts as class attributes (`settings_model`, `default_train_steps`,
`harness_domain`), see docs/plugins.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from meta_agent.domains.base import Domain, EvalResult, Split, TaskResult
from meta_agent.domains.settings import CodeSettings, MathSettings, SweSettings
from meta_agent.errors import UserError
from meta_agent.registry import Registry


@dataclass(frozen=True)
class DomainEntry:
    impl: str
    """`module:Class` of the Domain implementation (imported only when the domain is built)."""
    settings_model: type[BaseModel]
    default_train_steps: int
    """GRPO steps per generation and per candidate backtest when `--train-steps` is not given."""
    harness_domain: str
    """The harness template module it trains with (harness/<name>/ and configs/<name>.yaml)."""
    default_selection_limit: int = 30
    """Selection tasks per backtest evaluation when `--selection-limit` is not given."""
    cost_note: str = ""
    """What a generation costs at these defaults, for `evolve --help`."""


BUILTIN: dict[str, DomainEntry] = {
    # Math: the efficacy benchmark measured that a change as strong as the reference harness cannot pass
    # the gate on 30 selection tasks after 8 steps (CI lower bound 0) and does on 100 (docs/evolve.md,
    # "Fifth measurement"); fewer steps move SmolLM2's greedy answers on 2 of 30 tasks at most.
    "math": DomainEntry("meta_agent.domains.math:MathDomain", MathSettings, 8, "math", 100,
                        "about 8 min per generation with SmolLM2 on 2 CPU cores, K = 2"),
    "code": DomainEntry("meta_agent.domains.code:CodeDomain", CodeSettings, 4, "code", 30),
    # Multi-turn SWE steps cost ~10x a math step on a 2-core CPU.
    "swe": DomainEntry("meta_agent.domains.swe:SweDomain", SweSettings, 2, "swe", 30,
                       "each sealed episode is up to 6 turns of 128 greedy tokens, swe.scaffold: room for a scripted "
                       "agent that knows the fix (4 turns, 91 tokens at most) to pass"),
}


def defaults_help() -> str:
    """The built-in domains' generation defaults, for `evolve --help`."""
    return "; ".join(f"{name} {e.default_train_steps} steps, {e.default_selection_limit} selection tasks"
                     + (f" ({e.cost_note})" if e.cost_note else "") for name, e in BUILTIN.items())
DOMAINS: Registry[Domain] = Registry("domain", {name: e.impl for name, e in BUILTIN.items()})


def domain_entry(name: str) -> DomainEntry:
    """What the catalog knows of `name`; for a `module:Class` plugin, read from the class itself."""
    if name in BUILTIN:
        return BUILTIN[name]
    cls: Any = DOMAINS.get(name)
    missing = [a for a in ("settings_model", "default_train_steps", "harness_domain") if not hasattr(cls, a)]
    if missing:
        raise UserError(f"plugin domain {name} lacks the class attributes {missing} (see docs/plugins.md)")
    return DomainEntry(name, cls.settings_model, int(cls.default_train_steps), str(cls.harness_domain),
                       int(getattr(cls, "default_selection_limit", 30)))


def get_domain(name: str, settings: object | None = None) -> Domain:
    """The named domain (a registered name or `module:Class`), built with its settings when given."""
    cls: Any = DOMAINS.get(name)
    return cls(settings) if settings is not None else cls()


def domain_for(cfg: Any) -> Domain:
    """The domain a command config names (`cfg.domain`), with that config's settings for it."""
    name = str(cfg.domain)
    return get_domain(name, cfg.domain_settings())


__all__ = ["BUILTIN", "DOMAINS", "Domain", "DomainEntry", "EvalResult", "Split", "TaskResult", "domain_entry",
           "domain_for", "get_domain"]
