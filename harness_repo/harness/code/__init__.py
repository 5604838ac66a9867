"""Code domain: write a Python program (a function, or a stdin/stdout program) that passes tests."""

from harness.code.diagnostics import DIAGNOSTICS
from harness.code.prompts import build_messages
from harness.code.rewards import REWARDS

__all__ = ["DIAGNOSTICS", "REWARDS", "build_messages"]
