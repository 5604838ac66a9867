"""Math domain: arithmetic and word problems with a numeric final answer."""

from harness.math.diagnostics import DIAGNOSTICS
from harness.math.prompts import build_messages
from harness.math.rewards import REWARDS

__all__ = ["DIAGNOSTICS", "REWARDS", "build_messages"]
