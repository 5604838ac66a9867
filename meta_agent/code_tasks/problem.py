"""A code problem: statement, visible tests (the harness may see them), hidden tests (it never does)."""

from __future__ import annotations

import ast
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from meta_agent.contract import Task

IoMode = Literal["stdio", "call"]


class CodeTest(BaseModel):
    """One test, in exactly one of three shapes: stdin -> expected stdout; a call expression -> an
    expected Python literal; or assert code run after the program (HumanEval's `check`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    stdin: str | None = None
    stdout: str | None = None
    call: str | None = Field(None, description="expression calling the entry point, e.g. add(1, 2)")
    expected: str | None = Field(None, description="Python literal the call must equal (floats: rel. tol. 1e-6)")
    json_compare: bool = Field(False, description="compare after a JSON round trip (tuples == lists)")
    code: str | None = Field(None, description="assert statements; the entry point is in scope by name")

    @model_validator(mode="after")
    def _one_shape(self) -> CodeTest:
        shapes = [self.stdin is not None and self.stdout is not None,
                  self.call is not None and self.expected is not None, self.code is not None]
        if sum(shapes) != 1:
            raise ValueError("a test is exactly one of: stdin+stdout, call+expected, or code")
        if self.call is not None:
            ast.parse(self.call, mode="eval")
            ast.literal_eval(self.expected or "")
        return self

    @property
    def kind(self) -> Literal["stdio", "call", "code"]:
        return "stdio" if self.stdin is not None else "call" if self.call is not None else "code"

    def wire(self) -> dict[str, Any]:
        """The compact JSON form used in task metadata and runner jobs."""
        return self.model_dump(exclude_none=True, exclude_defaults=True)


class CodeProblem(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    prompt: str = Field(description="the full statement the policy sees, examples included")
    io: IoMode
    entry_point: str | None = Field(None, description="function name for call problems")
    visible: list[CodeTest] = Field(description="shown to the harness in Task.metadata; the reward may run them")
    hidden: list[CodeTest] = Field(description="the sealed verifier's full suite; never leaves meta-agent")
    prelude: str = Field("", description="imports every program gets (e.g. HumanEval's `from typing import List`)")
    stub: str = Field("", description="signature + docstring a completion may continue with a bare body")
    source: str
    difficulty: int = 0
    reference: str | None = Field(None, description="a known-correct program, used to check the tests")

    @model_validator(mode="after")
    def _has_tests(self) -> CodeProblem:
        if not self.hidden:
            raise ValueError(f"problem {self.id} has no hidden tests")
        if self.io == "call" and not self.entry_point:
            raise ValueError(f"call problem {self.id} needs an entry_point")
        return self

    def task(self) -> Task:
        """The harness's view: statement + visible tests; no hidden test, no reference."""
        return Task(
            id=self.id, prompt=self.prompt, answer="", difficulty=self.difficulty, source=self.source,
            metadata={"io": self.io, "entry_point": self.entry_point, "prelude": self.prelude,
                      "tests": [t.wire() for t in self.visible]},
        )


def examples_text(tests: list[CodeTest]) -> str:
    """Visible tests rendered for a statement, so the policy sees what the reward checks."""
    lines = []
    for t in tests:
        if t.kind == "call":
            lines.append(f">>> {t.call}\n{t.expected}")
        elif t.kind == "stdio":
            lines.append(f"Input:\n{(t.stdin or '').rstrip()}\nOutput:\n{(t.stdout or '').rstrip()}")
        else:
            lines.append((t.code or "").rstrip())
    return "\n\n".join(lines)
