"""Task domains: task sources and splits, the sealed verifier, the fixed evaluation protocol."""

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


def get_domain(name: str) -> Domain:
    return DOMAINS.get(name)()


__all__ = ["DOMAINS", "Domain", "EvalResult", "Split", "TaskResult", "get_domain"]
