"""The SKILL.md front matter: what a skill is for, when it triggers, and the evidence behind it."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

SKILL_FILE = "SKILL.md"
DomainTag = Annotated[str, Field(pattern=r"^(\*|[a-z][a-z0-9_]*)$")]
"""A domain name (built-in or a plugin's), or `*` for every domain."""
APPLY_FILE = "apply.py"
ParamValue = bool | int | float | str
"""A value a skill parameter can take in a range (JSON scalars only: ranges are searched and compared)."""
MAX_RANGE = 8
"""Values per parameter range: a search space a few generations can cover."""
SKILL_NAME = r"^[a-z0-9]+(-[a-z0-9]+)*$"
"""Lowercase letters and digits in words joined by single hyphens: no `a--b`, no leading or trailing `-`."""


class Trigger(BaseModel):
    """A report condition that suggests the skill: a diagnostic label's share, or a metric bound."""

    model_config = ConfigDict(extra="forbid")
    label: str | None = Field(None, description="diagnostic label, e.g. zero_variance_group")
    min_share: float = Field(0.2, ge=0, le=1, description="label must be on at least this share of rollouts")
    metric: str | None = Field(None, description="RolloutReport field, e.g. truncation_rate")
    above: float | None = None
    below: float | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Trigger:
        if (self.label is None) == (self.metric is None):
            raise ValueError("a trigger names exactly one of `label` or `metric`")
        if self.metric is not None and self.above is None and self.below is None:
            raise ValueError(f"metric trigger {self.metric!r} needs `above` or `below`")
        return self

    def describe(self) -> str:
        if self.label:
            return f"label {self.label} on >= {self.min_share:.0%} of rollouts"
        bound = f"> {self.above}" if self.above is not None else f"< {self.below}"
        return f"{self.metric} {bound}"


class Evidence(BaseModel):
    """One application of the skill and what the backtest measured."""

    model_config = ConfigDict(extra="forbid")
    run: str
    harness_repo: str
    commit: str
    domain: str
    metric: str
    delta: float | None = None
    ci: list[float] | None = Field(None, description="[low, high] of the paired 95% CI of delta")
    verdict: Literal["promoted", "rejected", "not_applicable"] = Field(
        description="not_applicable: the harness already had the change (neither a win nor a loss)")
    stage: str = Field("", description="where a rejection happened: static, replay, train, gate")
    date: str
    params: dict[str, Any] = Field(default_factory=dict, description="the parameters this application used")
    retired_it: bool = Field(False, description="this application's loss retired the skill in its domain "
                                                "(kept, so that a run redone after a kill journals the same)")
    conditions: str = Field("", description="digest of what the backtest ran under (main's tree, the starting "
                                            "policy, the run's settings, the tasks; evolve/conditions.py); '' "
                                            "when unknown")
    skill_digest: str = Field("", description="digest of the skill's code and settings when it was applied")

    @property
    def won(self) -> bool:
        return self.verdict == "promoted"

    @property
    def applicable(self) -> bool:
        """It was a real test of the skill: a win or a loss."""
        return self.verdict != "not_applicable"


SkillKind = Literal["validity", "measurability", "performance"]
KINDS: tuple[SkillKind, ...] = ("validity", "measurability", "performance")
"""In the order the offline proposer tries triggered skills."""


class SkillMeta(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=SKILL_NAME, min_length=2, max_length=64,
                      description="lowercase words joined by single hyphens, like its folder")
    description: str = Field(min_length=10, max_length=1024, description="one sentence: when to use it")
    domains: list[DomainTag] = Field(default_factory=lambda: list[DomainTag](["*"]))
    kind: SkillKind = Field(
        "performance", description="validity: closes a reward hole; measurability: makes training move the "
                                   "policy at all, so other changes can be measured; performance: the rest. "
                                   "The offline proposer tries them in this order")
    training_setting: bool = Field(
        False, description="it only changes how the policy is trained (a harness.yaml `rl` or `curriculum` "
                           "setting), not what is rewarded, filtered or measured: while training does not move "
                           "the policy, the offline proposer tries the triggered ones together, as one recipe")
    triggers: list[Trigger] = Field(default_factory=list)
    predicted_effects: list[dict[str, str]] = Field(
        default_factory=list, description="[{metric, direction: up|down}] the skill claims"
    )
    params: dict[str, Any] = Field(default_factory=dict, description="defaults passed to apply()")
    param_ranges: dict[str, list[ParamValue]] = Field(
        default_factory=dict, description="values worth trying per parameter, in the order to try them "
                                          "(the first should be the default): the proposer searches them")
    new_labels: list[str] = Field(default_factory=list, description="diagnostic labels the skill adds")
    status: Literal["active", "retired"] = Field("active", description="retired: in every domain (by hand)")
    retired_in: list[DomainTag] = Field(
        default_factory=list, description="domains where it kept losing: retired there, still active elsewhere")
    provenance: dict[str, str] = Field(default_factory=dict, description="who wrote it: seed, or run + candidate")
    evidence: list[Evidence] = Field(default_factory=list)

    @model_validator(mode="after")
    def _ranges(self) -> SkillMeta:
        for key, values in self.param_ranges.items():
            if key not in self.params:
                raise ValueError(f"param_ranges.{key}: not one of the skill's params ({', '.join(self.params)})")
            if not 1 <= len(values) <= MAX_RANGE:
                raise ValueError(f"param_ranges.{key}: give 1 to {MAX_RANGE} values, not {len(values)}")
            if len(set(map(repr, values))) != len(values):
                raise ValueError(f"param_ranges.{key}: a value is listed twice")
        return self

    @property
    def gate_kind(self) -> Literal["validity", "performance"]:
        """What a hypothesis built from this skill declares to the gate: a measurability change is judged
        like any performance change, by its paired selection delta."""
        return "validity" if self.kind == "validity" else "performance"

    def applies_to(self, domain: str) -> bool:
        return "*" in self.domains or domain in self.domains

    def active_in(self, domain: str) -> bool:
        """Offered for `domain`: made for it and not retired there (nor everywhere)."""
        return (self.status == "active" and self.applies_to(domain)
                and domain not in self.retired_in and "*" not in self.retired_in)

    def record(self, domain: str) -> tuple[int, int]:
        """(wins, applicable tests) of the skill in `domain`."""
        tests = [e for e in self.evidence if e.domain == domain and e.applicable]
        return sum(1 for e in tests if e.won), len(tests)
