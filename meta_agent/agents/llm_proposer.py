"""The `llm` proposer: diagnostician, one coder per hypothesis and a skill writer, over litellm.

Budgets and outages stop the run *between* steps: the loop journals only finished steps, so the
interrupted diagnosis or candidate is redone on `meta-agent resume`. Setup problems (no model, a
missing API key, a dollar budget for a model without a price) fail before any training starts.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from meta_agent.agents.base import Failure, Hypothesis, Implementation, Outcome, ProposalContext, Workspace
from meta_agent.agents.coder import Coder
from meta_agent.agents.diagnostician import Diagnostician
from meta_agent.agents.external.coder import ExternalCoder, external_coder
from meta_agent.agents.skill_writer import SkillWriter
from meta_agent.config import BudgetSettings, ConfigFileError, EvolveConfig, LLMSettings
from meta_agent.errors import BudgetExhausted
from meta_agent.llm import (
    BudgetExceeded,
    Ledger,
    LLMAuthError,
    LLMBudget,
    LLMClient,
    LLMRequestError,
    LLMUnavailable,
    RetryPolicy,
)
from meta_agent.llm.accounting import USAGE_FILE
from meta_agent.llm.cache import CACHE_DIR, ResponseCache
from meta_agent.skills.retrieve import rank, render_for_prompt
from meta_agent.skills.store import SkillSet
from sandboxes import Mount

SKILLS_IN_PROMPT = 6
SKILL_PROMPT_TOKENS = 3_000
TRANSCRIPTS = "transcripts"


class LLMStop(BudgetExhausted):
    """An LLM budget ran out, the provider stopped answering, or it rejected the diagnosis request: the run
    stops cleanly between steps and can be resumed (after raising the budget or fixing the model)."""


class LLMProposer:
    """Implements the Proposer protocol with LLM agents; `budget_reason` plugs into the loop's Budget checks."""

    name = "llm"

    @classmethod
    def from_config(cls, cfg: EvolveConfig, skills: SkillSet, run_dir: Path) -> LLMProposer:
        return cls(skills=skills, settings=cfg.llm, run_dir=run_dir, budget=cfg.budget)

    def __init__(self, skills: SkillSet, settings: LLMSettings, run_dir: Path, budget: BudgetSettings,
                 retry: RetryPolicy | None = None) -> None:
        if not settings.model:
            raise ConfigFileError("--proposer llm needs a model: pass --model (e.g. anthropic/claude-sonnet-4-6, or "
                                  "openai/NAME with --api-base for a local server) or set llm.model in the config file")
        self.skills = skills
        self.settings = settings
        self.run_dir = run_dir
        self.ledger = Ledger(run_dir / USAGE_FILE)
        self.budget = LLMBudget(tokens=budget.llm_tokens, dollars=budget.llm_dollars)
        clients: dict[str, LLMClient] = {}
        cache = ResponseCache(settings.cache_dir or run_dir / CACHE_DIR) if settings.cache else None

        def client(model: str) -> LLMClient:
            if model not in clients:
                clients[model] = LLMClient(model, ledger=self.ledger, budget=self.budget, api_base=settings.api_base,
                                           timeout_s=settings.timeout_s, retry=retry, cache=cache)
            return clients[model]

        transcripts = run_dir / TRANSCRIPTS
        self.diagnostician = Diagnostician(client(settings.diagnostician_model or settings.model), transcripts,
                                           max_tokens=settings.diagnostician_tokens)
        self.coder: Coder | ExternalCoder
        if settings.coder == "builtin":
            self.coder = Coder(client(settings.coder_model or settings.model), transcripts, skills,
                               settings.max_coder_steps,
                               specialist_steps=settings.specialist_steps if settings.specialists else None,
                               deadline_s=settings.coder_timeout_s)
        else:
            self.coder = external_coder(settings, self.ledger, self.budget, transcripts)
        self.skill_writer = SkillWriter(client(settings.model), transcripts, skills)
        for c in clients.values():
            self._check(c)

    def _check(self, c: LLMClient) -> None:
        try:
            c.check_credentials()
        except LLMAuthError as e:
            raise ConfigFileError(str(e)) from None
        if self.budget.dollars is not None and c.price() is None:
            raise ConfigFileError(f"a dollar budget cannot be enforced for {c.model}: litellm has no price for it; "
                                  f"use a token budget (budget.llm_tokens) instead")

    def mounts(self) -> list[Mount]:
        """Extra read-only mounts of a candidate's sandbox session (an external coder's relay socket)."""
        return self.coder.mounts() if isinstance(self.coder, ExternalCoder) else []

    def budget_reason(self) -> str | None:
        """None while the run's LLM budgets have room; else a sentence saying which one is used up."""
        return self.budget.reason(self.ledger)

    @contextmanager
    def _stops(self) -> Iterator[None]:
        try:
            yield
        except (BudgetExceeded, LLMUnavailable, LLMRequestError) as e:
            # The coder and skill writer turn a rejected request into a failed candidate / no skill
            # themselves; one that reaches here (the diagnosis) leaves the generation nothing to work on.
            raise LLMStop(str(e)) from e
        except LLMAuthError as e:
            raise ConfigFileError(str(e)) from e

    def propose(self, ctx: ProposalContext, k: int) -> list[Hypothesis]:
        ranked = [r for r in rank(self.skills, ctx.report) if r.score > 0][:SKILLS_IN_PROMPT]
        with self._stops():
            hypotheses = self.diagnostician.diagnose(ctx, k, render_for_prompt(ranked, SKILL_PROMPT_TOKENS),
                                                     {s.name for s in self.skills.all()})
        if not hypotheses:
            print(f"diagnostician: no usable hypotheses for generation {ctx.generation}; see "
                  f"{self.run_dir / TRANSCRIPTS}", file=sys.stderr)
        return hypotheses

    def implement(self, hypothesis: Hypothesis, workspace: Workspace) -> Implementation:
        with self._stops():
            return self.coder.implement(hypothesis, workspace, self.run_dir.name)

    def repair(self, hypothesis: Hypothesis, workspace: Workspace, failure: Failure) -> Implementation:
        with self._stops():
            return self.coder.repair(hypothesis, workspace, self.run_dir.name, failure)

    def learn(self, outcome: Outcome) -> Path | None:
        with self._stops():
            return self.skill_writer.write(outcome)
