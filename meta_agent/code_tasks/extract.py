"""The sealed evaluator's fixed prompt and program extraction. Never evolved: the harness has its own.

Extraction: the fenced code blocks of the completion (```python, ```py or a bare ```; an
unterminated last block counts, so a truncated answer is judged rather than ignored). For a call
problem the last block that defines the entry point wins, else the last block, which is appended to
the problem's stub when it defines nothing (a completion that continues the function body). The
problem's prelude (HumanEval's imports) goes first. No block at all means no program.
"""

from __future__ import annotations

import re

from meta_agent.code_tasks.problem import CodeProblem

SYSTEM = ("You are an expert Python programmer. Solve the task and answer with the complete solution in a "
          "single ```python code block.")
IO_INSTRUCTION = {
    "stdio": "Read the input from standard input and print the answer to standard output.",
    "call": "Write the function `{entry}`; it is called directly, so do not read input or print the result.",
}
_FENCE = re.compile(r"```[ \t]*([\w+.-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)
PYTHON_TAGS = ("", "python", "py", "python3")


def conversation(problem: CodeProblem) -> list[dict[str, str]]:
    instruction = IO_INSTRUCTION[problem.io].format(entry=problem.entry_point)
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": f"{problem.prompt}\n\n{instruction}"}]


def code_blocks(completion: str) -> list[str]:
    return [body for tag, body in _FENCE.findall(completion) if tag.lower() in PYTHON_TAGS and body.strip()]


def _defines(code: str, name: str) -> bool:
    return re.search(rf"^\s*(?:async\s+)?(?:def|class)\s+{re.escape(name)}\b", code, re.M) is not None


def extract_program(problem: CodeProblem, completion: str) -> str | None:
    blocks = code_blocks(completion)
    if not blocks:
        return None
    code = blocks[-1]
    if problem.io == "call" and problem.entry_point:
        defining = [b for b in blocks if _defines(b, problem.entry_point)]
        if defining:
            code = defining[-1]
        elif problem.stub:
            code = problem.stub.rstrip("\n") + "\n" + code
    return f"{problem.prelude}\n{code}" if problem.prelude else code
