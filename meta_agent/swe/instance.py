"""`SweInstance`: one repository-level bug-fix task, in SWE-bench's field names, and its JSONL I/O.

Files written here can be read by SWE-bench tooling, and SWE-bench / SWE-Gym files can be
read here: those encode FAIL_TO_PASS / PASS_TO_PASS as JSON strings, ours as lists; both
are accepted. Fields SWE-bench does not know (`setup`, `split`, `mutation`) are ours; the
private one (`mutation`, which locates the bug) is left out of exported files unless asked for.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from packaging.requirements import InvalidRequirement, Requirement
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from meta_agent.fsutil import atomic_write_lines
from meta_agent.swe.difficulty import Tier, tier
from meta_agent.swe.errors import SweTaskError
from meta_agent.swe.image_ref import image_reference

PRIVATE_FIELDS = frozenset({"mutation"})
"""Fields that hand the bug's location to whoever reads the file: kept in the task cache, not exported."""

MAX_DEPS = 50
IMAGE_ALIASES = ("image_name", "docker_image")
"""Where other SWE-bench-family files name an instance's image: SWE-smith (`image_name`), R2E-Gym (`docker_image`)."""
Split = Literal["train", "selection", "test"]
SPLITS: tuple[Split, ...] = ("train", "selection", "test")


class TestSetup(BaseModel):
    """How to run the instance's tests: everything the evaluator needs besides the checkout."""

    __test__ = False  # not a pytest test class despite the name
    model_config = ConfigDict(extra="forbid")

    python_path: list[str] = Field(default_factory=lambda: ["."], max_length=20)
    """Directories (relative to the checkout) put first on sys.path, e.g. ["src", "."] for a src layout."""
    deps: list[str] = Field(default_factory=list, max_length=MAX_DEPS)
    """pip requirements the tests need besides pytest, as plain requirement specifiers (`name[extra]>=1.0;
    marker`, never a URL, path or pip option); installed once into a cached venv by pip in a sandbox."""
    pytest_args: list[str] = Field(default_factory=list, max_length=50)
    """Extra pytest arguments, applied at build and at evaluation alike."""
    timeout_s: float = Field(60.0, gt=0, le=3600)
    """Wall-time limit of one run of the instance's FAIL_TO_PASS + PASS_TO_PASS tests."""

    @field_validator("deps")
    @classmethod
    def _plain_requirements(cls, deps: list[str]) -> list[str]:
        return [plain_requirement(d) for d in deps]

    @field_validator("python_path", "pytest_args")
    @classmethod
    def _bounded(cls, items: list[str]) -> list[str]:
        for item in items:
            if len(item) > 500 or "\x00" in item:
                raise ValueError(f"{item[:80]!r}...: over 500 characters or holds a NUL byte")
        return items

    @field_validator("python_path")
    @classmethod
    def _inside_checkout(cls, paths: list[str]) -> list[str]:
        for path in paths:
            if PurePosixPath(path).is_absolute() or ".." in PurePosixPath(path).parts:
                raise ValueError(f"{path!r} must be a directory inside the checkout (relative, no '..')")
        return paths


def plain_requirement(spec: str) -> str:
    """`spec` if it is a plain PEP 508 requirement (name, extras, version specifiers, marker); else ValueError.

    A task file's deps are installed by pip: a URL, a local path, a VCS link or an option such as
    `--index-url` would let the file choose what code is fetched and from where."""
    if len(spec) > 200 or spec != spec.strip() or any(c in spec for c in "\n\r\x00"):
        raise ValueError(f"{spec[:80]!r}: a requirement is one line of at most 200 characters")
    try:
        req = Requirement(spec)
    except InvalidRequirement as e:
        raise ValueError(f"{spec!r} is not a plain requirement such as 'six>=1.16' ({e})") from None
    if req.url:
        raise ValueError(f"{spec!r} names a URL or a file; only requirements by name and version are installed")
    return spec


class MutationInfo(BaseModel):
    """Which injected bug this instance is (never shown to a policy: it locates the bug)."""

    model_config = ConfigDict(extra="forbid")

    operator: str
    file: str
    line: int
    function: str | None = None
    """The innermost function holding the bug (None at module level, or for instances built before)."""
    function_lines: int | None = None
    test_names_function: bool | None = None
    """A FAIL_TO_PASS test id names that function; None for instances built before difficulty was recorded."""


class HarborSpec(BaseModel):
    """A Harbor task's parts meta-agent keeps (`meta_agent/swe/harbor.py`): its files stay in the task cache and
    are sealed from the harness and the policy; its verifier script gives the reward."""

    model_config = ConfigDict(extra="forbid")

    task_dir: str = Field(max_length=1000)
    """The task's copy in the task cache (environment/ and tests/)."""
    test_script: str = Field("tests/test.sh", max_length=200)
    """The verifier, relative to task_dir; it runs at /tests in the image and writes /logs/verifier/reward.txt."""
    workdir: str | None = Field(None, max_length=500)
    """Where the policy works in the image; None: the image's WORKDIR."""
    verifier_timeout_s: float = Field(600.0, gt=0, le=24 * 3600)

    @field_validator("task_dir")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not PurePosixPath(value).is_absolute() or ".." in PurePosixPath(value).parts:
            raise ValueError(f"{value!r} must be an absolute path without '..'")
        return value

    @field_validator("test_script")
    @classmethod
    def _under_tests(cls, value: str) -> str:
        path = PurePosixPath(value)
        if path.is_absolute() or ".." in path.parts or path.parts[:1] != ("tests",):
            raise ValueError(f"{value!r} must be a path under tests/ (relative, no '..')")
        return value

    @field_validator("workdir")
    @classmethod
    def _work_path(cls, value: str | None) -> str | None:
        if value is None:
            return None
        path = PurePosixPath(value)
        if not path.is_absolute() or ".." in path.parts or len(path.parts) < 2:
            raise ValueError(f"{value!r} must be an absolute directory below / (not / itself), without '..'")
        return value


class SweInstance(BaseModel):
    """One task: the buggy tree at `base_commit`, the gold `patch` that fixes it, and the tests that judge it."""

    model_config = ConfigDict(extra="ignore")

    instance_id: str
    repo: str
    """owner/name for GitHub projects; pypi/<name>-<version> or local/<name>-<hash> for built ones."""
    base_commit: str
    patch: str
    """The gold fix as a unified diff (for built instances: the inverse of the injected bug)."""
    test_patch: str = ""
    """A diff adding the judging tests (SWE-bench); empty when the tests already exist in the repo."""
    problem_statement: str
    hints_text: str = ""
    FAIL_TO_PASS: list[str]
    PASS_TO_PASS: list[str] = Field(default_factory=list)
    version: str = ""
    environment_setup_commit: str = ""
    created_at: str = ""
    setup: TestSetup | None = None
    """None for imported instances whose environment is not known here (then pytest defaults are used)."""
    split: Split | None = None
    mutation: MutationInfo | None = None
    graded_as: Literal["unprivileged", "root"] | None = None
    """Who ran the tests when FAIL_TO_PASS and PASS_TO_PASS were found: `unprivileged` for every instance
    built here (sandboxed code never runs as root), None when a file does not say (SWE-bench's own harness
    runs tests as root in a container). A test that depends on who runs it (one that skips itself as root,
    such as pyflakes' test_permissionDenied) passes for one and is skipped for the other, so an instance's
    lists hold only for graders that run tests as this identity; `tasks verify` says which it ran as."""

    image: str | None = None
    """The container image that holds the repository at /testbed (at base_commit) with everything its tests need
    (SWE-bench, SWE-Gym, SWE-smith and R2E-Gym ship one per instance; also read from `image_name` and
    `docker_image`). None: the repository is built here and tests run in meta-agent's own sandbox and test venv."""
    dockerfile: str | None = Field(None, max_length=100_000)
    """How to build `image` where no registry has it (`meta-agent tasks images build`): a Dockerfile, built with an
    empty context, no network unless asked for, and `ARG META_AGENT_BASE` set to meta-agent's Debian base image."""
    eval_script: str | None = Field(None, max_length=1_000_000)
    """SWE-bench's test spec: the bash script that runs the tests in the image, printing SWE-bench's start and end
    markers around the test output. None: one is written from FAIL_TO_PASS/PASS_TO_PASS (pytest)."""
    log_parser: str | None = None
    """The name of the swebench log parser that reads `eval_script`'s output (e.g. parse_log_pytest)."""
    eval_type: Literal["pass_and_fail", "fail_only"] | None = None
    harbor: HarborSpec | None = None
    """Set for a Harbor task (`tasks import DIR`): its verifier script, not pytest, decides (one pseudo-test,
    FAIL_TO_PASS = [its test script])."""

    @model_validator(mode="before")
    @classmethod
    def _image_aliases(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("image") is None:
            for alias in IMAGE_ALIASES:
                if data.get(alias) is not None:
                    return {**data, "image": data[alias]}
        return data

    @field_validator("image")
    @classmethod
    def _image_name(cls, value: str | None) -> str | None:
        return None if value is None else image_reference(value)

    @field_validator("log_parser")
    @classmethod
    def _known_parser(cls, value: str | None) -> str | None:
        if value is None:
            return None
        from swebench.harness.log_parsers import PARSER_REGISTRY

        if value not in PARSER_REGISTRY:
            raise ValueError(f"{value[:80]!r} is not one of swebench's log parsers (e.g. parse_log_pytest)")
        return value

    @model_validator(mode="after")
    def _image_fields_need_an_image(self) -> SweInstance:
        given = [f for f in ("dockerfile", "eval_script", "log_parser", "harbor") if getattr(self, f) is not None]
        if given and self.image is None:
            raise ValueError(f"{', '.join(given)} describe how the instance runs in its container image; "
                             "give its `image` too")
        if self.eval_script is not None and self.log_parser is None:
            raise ValueError("an eval_script needs the log_parser that reads its output (e.g. parse_log_pytest)")
        return self

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", mode="before")
    @classmethod
    def _decode_json_list(cls, value: Any) -> Any:
        # SWE-bench and SWE-Gym store these as JSON-encoded strings.
        if isinstance(value, str):
            try:
                return json.loads(value) if value.strip() else []
            except json.JSONDecodeError as e:
                raise ValueError(f"not a JSON list of test ids: {e.msg}") from e
        return value

    @field_validator("created_at", "version", mode="before")
    @classmethod
    def _stringify(cls, value: Any) -> Any:
        return "" if value is None else str(value)

    @property
    def project(self) -> str:
        """The repo without the owner, used to group instances for splits and listings."""
        return self.repo.split("/", 1)[-1]

    @property
    def tier(self) -> Tier | None:
        """Its difficulty tier (meta_agent/swe/difficulty.py), derived from its bug's recorded facts; None for
        imported instances and those built before the facts were recorded."""
        m = self.mutation
        if m is None or m.test_names_function is None:
            return None
        return tier(m.operator, m.function_lines, m.test_names_function, len(self.FAIL_TO_PASS))

    def test_setup(self) -> TestSetup:
        return self.setup or TestSetup()


def read_instances(path: Path) -> list[SweInstance]:
    """Parse SWE-bench / SWE-Gym / our JSONL (or a JSON list); the first bad record raises with file:line."""
    if not path.is_file():
        raise SweTaskError(f"{path}: no such file; pass a SWE-bench-style .jsonl file")
    text = path.read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        try:
            rows: list[tuple[int, Any]] = list(enumerate(json.loads(text), start=1))
        except json.JSONDecodeError as e:
            raise SweTaskError(f"{path}: not valid JSON ({e.msg} at line {e.lineno})") from e
    else:
        rows = []
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rows.append((lineno, json.loads(line)))
            except json.JSONDecodeError as e:
                raise SweTaskError(f"{path}:{lineno}: not valid JSON ({e.msg})") from e
    instances = []
    for where, data in rows:
        try:
            instances.append(SweInstance.model_validate(data))
        except ValidationError as e:
            first = e.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "<record>"
            raise SweTaskError(f"{path}:{where}: field {field}: {first['msg']}") from e
    return instances


def write_instances(path: Path, instances: Iterable[SweInstance], *, with_private: bool) -> int:
    """Atomic JSONL write in SWE-bench's layout (lists stay lists; unset optional fields are kept as null).

    Without `with_private`, PRIVATE_FIELDS are left out: what an exported file may be shown to.
    """
    exclude = None if with_private else set(PRIVATE_FIELDS)
    return atomic_write_lines(path, (i.model_dump_json(exclude=exclude) for i in instances))
