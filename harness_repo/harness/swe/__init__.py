"""SWE domain: repository-level bug fixing by a multi-turn shell agent.

Each episode: the policy sees the problem statement, emits one shell command per turn in a
fenced block, sees the (capped) output, and ends with `submit`; the final `git diff` of its
checkout is the answer, scored by running the instance's tests.
"""

from harness.swe.demonstrations import demonstrations
from harness.swe.diagnostics import DIAGNOSTICS
from harness.swe.prompts import build_messages
from harness.swe.rewards import REWARDS
from harness.swe.rollout_func import make_rollout_func

__all__ = ["DIAGNOSTICS", "REWARDS", "build_messages", "demonstrations", "make_rollout_func"]
