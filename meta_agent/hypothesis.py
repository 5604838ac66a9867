"""What a proposer yields: one diagnosed failure mode and the intervention meant to fix it (`Hypothesis`).

A leaf module: the journal stores hypotheses as they were validated here, and the agents, the loop and
the read models all load them back through this one model.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, BeforeValidator, Field, field_validator

from meta_agent.llm.text import bound, clean_text

Surface = Literal["rewards", "filters", "rl_settings", "prompts", "diagnostics"]
SURFACES: tuple[str, ...] = get_args(Surface)


MAX_TEXT = 4_000
"""Characters kept of a hypothesis's free text (evidence, intervention): it is re-sent on every coder turn and
becomes a commit message, so a proposer's 150,000 characters must not."""
MAX_NAME = 200
MAX_ITEMS = 50
MAX_PARAMS_JSON = 8_000
MAX_PARAMS_DEPTH = 6


def _cut(limit: int) -> Any:
    """A before-validator keeping at most `limit` characters of a string (with a marker saying so)."""
    def cut(value: object) -> object:
        return bound(clean_text(value), limit) if isinstance(value, str) else value
    return cut


def _depth(value: object, level: int = 0) -> int:
    """Nesting depth of plain JSON data, counted without recursing past the limit."""
    if level > MAX_PARAMS_DEPTH:
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level


ShortText = Annotated[str, BeforeValidator(_cut(MAX_NAME))]
LongText = Annotated[str, BeforeValidator(_cut(MAX_TEXT))]


class PredictedEffect(BaseModel):
    metric: ShortText = Field(description="a report metric or label, e.g. zero_variance_frac, selection_accuracy")
    direction: Literal["up", "down"]


class Hypothesis(BaseModel):
    """One diagnosed failure mode and the intervention meant to fix it. Every field is bounded: a proposer's
    text goes into prompts, commit messages, the journal and git notes."""

    title: str = Field(max_length=100, description="one line; becomes the commit title")
    failure_mode: ShortText = Field(description="the diagnostic label or metric the hypothesis is about")
    evidence: LongText = Field(description="numbers from the report and example rollout ids")
    evidence_rollouts: list[ShortText] = Field(default_factory=list, max_length=MAX_ITEMS)
    intervention: LongText = Field(description="what to change in the harness, concretely")
    kind: Literal["validity", "performance"] = Field(
        description="validity: closes a reward hole or adds a diagnostic (judged on its replay and must not pay "
        "rejected rollouts in its own training); "
        "performance: shaping, filters, curriculum, RL settings (needs the train stage)"
    )
    predicted_effects: list[PredictedEffect] = Field(default_factory=list, max_length=MAX_ITEMS)
    skills_used: list[ShortText] = Field(default_factory=list, max_length=MAX_ITEMS)
    new_labels: list[ShortText] = Field(default_factory=list, max_length=MAX_ITEMS,
                                        description="diagnostic labels the change adds")
    surface: Surface | None = Field(None, description="the part of the harness it changes: rewards, filters (and "
                                                      "curriculum), rl_settings, prompts or diagnostics; with "
                                                      "llm.specialists on, the coder of that surface implements it")
    params: dict[str, Any] = Field(default_factory=dict)

    @field_validator("title", mode="before")
    @classmethod
    def _clean_title(cls, value: object) -> object:
        return clean_text(value) if isinstance(value, str) else value

    @field_validator("params")
    @classmethod
    def _plain_params(cls, params: dict[str, Any]) -> dict[str, Any]:
        """Parameters are a few plain values (a learning rate, a penalty): deep or large data is refused here,
        before anything serializes it."""
        if _depth(params) > MAX_PARAMS_DEPTH:
            raise ValueError(f"params nest deeper than {MAX_PARAMS_DEPTH} levels; give a few plain values")
        try:
            size = len(json.dumps(params, allow_nan=False))
        except (TypeError, ValueError) as e:
            raise ValueError(f"params must be plain JSON values ({e})") from None
        if size > MAX_PARAMS_JSON:
            raise ValueError(f"params take {size:,} characters as JSON, over {MAX_PARAMS_JSON:,}")
        return params

    @field_validator("surface", mode="before")
    @classmethod
    def _known_surface(cls, value: object) -> object:
        """An unknown surface routes to the generalist coder rather than failing the whole diagnosis."""
        return value if value in SURFACES else None

    def predicted_text(self) -> str:
        return ", ".join(f"{e.metric} {e.direction}" for e in self.predicted_effects) or "unspecified"
