"""Task domains: task sources and splits, the sealed verifier, the fixed evaluation protocol."""

from typing import Any

from meta_agent.domains.base import Domain, EvalResult, Split, TaskResult
from meta_agent.registry import Registry

DOMAINS: Registry[Domain] = Registry(
    "domain",
    {
        "math": "meta_agent.domains.math:MathDomain",
        "code": "meta_agent.domains.code:CodeDomain",
        "swe": "meta_agent.domains.swe:SweDomain",
    },
)


def get_domain(name: str, settings: object | None = None) -> Domain:
    """The named domain, built with its settings model (e.g. MathSettings) when given."""
    cls: Any = DOMAINS.get(name)
    return cls(settings) if settings is not None else cls()


def domain_for(cfg: object) -> Domain:
    """The domain a command config names (`cfg.domain`), with that config's settings for it (`cfg.<domain>`)."""
    name = str(getattr(cfg, "domain"))  # noqa: B009 (configs of several commands share this shape)
    return get_domain(name, getattr(cfg, name, None))


__all__ = ["DOMAINS", "Domain", "EvalResult", "Split", "TaskResult", "domain_for", "get_domain"]
