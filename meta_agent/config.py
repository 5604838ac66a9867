"""Settings of every command, as pydantic models whose fields document themselves.

Every command layers its settings the same way (`build`): the model's defaults < a `--config FILE`
(YAML), or for `resume` the settings the run saved at its start < the options given on the command line.
Nested sections (`llm`, `budget`, `sandbox`, `executor`, ...) are merged key by key.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator, model_validator

from meta_agent.backtest.gate import GateSettings
from meta_agent.coders import CoderName
from meta_agent.domains import BUILTIN, DOMAINS, domain_entry
from meta_agent.errors import UserError
from meta_agent.execution.settings import ExecutorSettings
from meta_agent.proposers import PROPOSERS
from meta_agent.tracking import Tracker
from sandboxes import BACKENDS, Limits
from sandboxes.gpu import has_gpu


class ConfigFileError(UserError, ValueError):
    """A --config file is unreadable or has an invalid field."""


class SandboxSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    backend: str = Field(
        "auto", description="auto = docker if an engine answers, else bwrap; process = no isolation (explicit only); "
                            "or a plugin backend as module:Class")
    memory_mb: int = Field(12_000, ge=256, description="memory cap for everything one harness command starts")
    cpus: float = Field(2.0, gt=0, description="CPU quota in cores")
    pids: int = Field(1024, ge=16, description="process/thread cap (stops fork bombs)")
    disk_mb: int = Field(8192, ge=16, description="disk quota of one harness session, MiB: what its commands may add "
                                                  "to its workdir, output dir and scratch together (and the most one "
                                                  "file or its in-memory /tmp may hold); past it the command is "
                                                  "killed, what it wrote is deleted and the candidate fails. Raise it "
                                                  "for a policy whose checkpoint is larger (a full one takes about "
                                                  "4 bytes a parameter)")
    train_timeout_s: float = Field(4 * 3600, gt=0, description="wall-time limit of one `harness train`")
    step_timeout_s: float = Field(900, gt=0, description="wall-time limit of replay/diagnose/selftest")
    gpus: Literal["auto", "off"] = Field(
        "auto", description="auto: harness commands see the host's NVIDIA GPUs when it has them (training then "
                            "runs on them, in the precision harness.yaml sets); off: CPU only")

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, name: str) -> str:
        if name != "auto" and not BACKENDS.valid(name):
            raise ValueError(f"unknown sandbox backend {name!r}; available: auto | {BACKENDS.describe()}")
        return name

    def limits(self) -> Limits:
        return Limits(memory_mb=self.memory_mb, cpus=self.cpus, pids=self.pids, timeout_s=self.step_timeout_s,
                      gpus=self.gpus == "auto" and has_gpu(), disk_mb=self.disk_mb)


# One settings section per registered domain (`math:`, `code:`, `swe:` in a --config file), made from
# the domain registry so that a new domain is one entry there.
if TYPE_CHECKING:
    _DomainSections = BaseModel
else:
    _DomainSections = create_model(
        "_DomainSections", __config__=ConfigDict(extra="forbid"),
        **{name: (e.settings_model, Field(default_factory=e.settings_model, description=f"{name} domain settings"))
           for name, e in BUILTIN.items()})


class RunConfig(_DomainSections):
    """Settings every command that trains under a harness shares."""

    model_config = ConfigDict(extra="forbid")
    domain: str = Field("math", description=f"task domain: {DOMAINS.describe()}")
    harness: Path | None = Field(None, description="harness git repo; default: a fresh one inside the run dir")
    policy: str | None = Field(None, description="smollm2 (default), tiny, or a local model/checkpoint dir")
    seed: int = 0
    run_dir: Path | None = Field(None, description="default: runs/<timestamp>-<command>-<domain>")
    sandbox: SandboxSettings = SandboxSettings()
    tracker: Tracker = Field("none", description="experiment tracker for training and generation metrics, as "
                                                 "local files: none, tensorboard, trackio or mlflow")
    plugin: dict[str, Any] = Field(default_factory=dict,
                                   description="settings of a plugin domain (--domain module:Class)")

    @model_validator(mode="after")
    def _one_sandbox_setting(self) -> RunConfig:
        """`sandbox.backend` (`--sandbox`) reaches every domain's own sandboxed work (the code verifier's test
        runs, the SWE episodes and test runs) unless that domain's section names a backend of its own."""
        for name in ("code", "swe"):
            section = getattr(self, name, None)
            if section is not None and getattr(section, "sandbox", "") is None:
                setattr(self, name, section.model_copy(update={"sandbox": self.sandbox.backend}))
        return self

    @field_validator("domain")
    @classmethod
    def _known_domain(cls, name: str) -> str:
        if not DOMAINS.valid(name):
            raise ValueError(f"unknown domain {name!r}; available: {DOMAINS.describe()}")
        return name

    def domain_settings(self) -> BaseModel:
        """This config's settings for its domain (a plugin's from `plugin:`, checked by its model)."""
        if self.domain in BUILTIN:
            return getattr(self, self.domain)
        return domain_entry(self.domain).settings_model.model_validate(self.plugin)


class RolloutConfig(RunConfig):
    """`meta-agent rollout`: train the policy N steps under a harness and report on the rollouts."""

    steps: int = Field(4, ge=1, description="GRPO optimizer steps")


class BudgetSettings(BaseModel):
    """Hard limits; when one runs out the run stops after the current step and can be resumed."""

    model_config = ConfigDict(extra="forbid")
    wall_minutes: float | None = Field(None, gt=0, description="wall-clock minutes for this invocation")
    llm_tokens: int | None = Field(None, gt=0, description="LLM tokens (prompt + completion) for the whole run")
    llm_dollars: float | None = Field(None, gt=0, description="LLM spend in dollars for the whole run")


class LLMSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str | None = Field(None, description="any litellm model, e.g. anthropic/claude-sonnet-4-6")
    diagnostician_model: str | None = Field(None, description="override for the diagnostician")
    coder_model: str | None = Field(None, description="override for the coder agents")
    api_base: str | None = Field(None, description="OpenAI-compatible base URL (vLLM, llama.cpp, Ollama)")
    coder_api_base: str | None = Field(None, description="base URL of the coder's model when it differs (default: "
                                                         "api_base), e.g. an Anthropic endpoint for claude-code")
    coder: CoderName = Field(
        "builtin", description="who writes the code: builtin (meta-agent's own tool loop), or an external coding "
                               "agent run in the candidate's sandbox (docs/llm-agents.md)")
    max_coder_steps: int = Field(20, ge=1, description="tool calls a coder may make before it must stop (external "
                                                       "coders: model turns)")
    coder_timeout_s: float = Field(1800, gt=0, description="wall-clock limit of one coder session (built-in or "
                                                         "external); past it the candidate fails with that reason")
    diagnostician_tokens: int = Field(150_000, ge=1_000, description="prompt + completion tokens one diagnosis "
                                                                      "may use while it reads the evidence")
    specialists: bool = Field(False, description="route each hypothesis to the coder of its surface (rewards, "
                                                 "filters, rl_settings, prompts, diagnostics): that role's prompt "
                                                 "and step budget (specialist_steps)")
    specialist_steps: dict[str, int] = Field(
        default_factory=lambda: {"rewards": 20, "filters": 20, "rl_settings": 10, "prompts": 15, "diagnostics": 20},
        description="tool calls per specialist (a surface missing here gets max_coder_steps)")
    timeout_s: float = Field(120, gt=0, description="per-call timeout")
    cache: bool = Field(True, description="keep every reply, keyed by its whole request, so a resumed or re-run "
                                          "generation pays nothing twice for the same request")
    cache_dir: Path | None = Field(None, description="where replies are kept (default RUN/llm-cache); point runs "
                                                     "at one directory to share it between them")


SETTINGS_NOT_RESULTS = {"run_dir", "harness", "tracker", "budget", "rerun_known", "reuse_across_runs", "generations",
                        "search_steps", "test_limit"}
"""Settings that change where a run writes, when it stops, how long it goes on, what it proposes or its final
test comparison, not what its trainings and backtests measure."""


class EvolveConfig(RunConfig):
    """`meta-agent evolve`: evolve a harness while the policy trains (see docs/evolve.md)."""

    generations: int = Field(2, ge=1, description="train -> diagnose -> backtest -> merge cycles")
    candidates: int = Field(2, ge=1, description="hypotheses implemented and backtested per generation")
    train_steps: int | None = Field(
        None, ge=1, description="GRPO steps per generation and per candidate backtest (default: the domain's, "
                                "math 8, code 4, swe 2)")
    proposer: str = Field("skills", description=f"who proposes and implements candidates: {PROPOSERS.describe()}")
    llm: LLMSettings = LLMSettings()
    skills: list[Path] = Field(default_factory=list, description="extra skills libraries, searched after the user's")
    control: Literal["static", "none"] = Field(
        "static", description="static: also train the unchanged harness with the same compute, compare at the end")
    selection_limit: int | None = Field(
        None, ge=1, description="selection-split tasks per backtest evaluation (default: the domain's, math 100, "
                                "code/swe 30; null = the whole split)")
    test_limit: int | None = Field(60, ge=1, description="test-split tasks in the final comparison (None = all)")
    noise_reruns: int = Field(1, ge=0, description="control-vs-control reruns measuring the noise floor")
    confirm_steps: int = Field(0, ge=0, description=(
        "successive halving: the most promising candidates the gate did not promote after `train_steps` train "
        "this many more steps beside the control, and the gate judges that run (0 = off; costs "
        "(1 + confirm_top) x confirm_steps GRPO steps per generation, at most)"))
    confirm_top: int = Field(1, ge=1, description="candidates per generation that get the confirmation rung")
    search_steps: int | None = Field(None, ge=1, description=(
        "GRPO steps the whole run may spend on the search: candidate backtests, confirmation rungs and noise "
        "reruns (None = no bound). A generation proposes only as many candidates as the steps left pay for, and "
        "the confirmation rung takes only what fits; main still trains every generation. Give two runs the "
        "same value to compare proposers at the same compute (meta_agent/evolve/search_budget.py)"))
    archive_parents: int = Field(0, ge=0, description=(
        "of a generation's K hypotheses, up to this many are built on an archived candidate (one that passed "
        "every stage, did not score below main, but was not promoted) instead of on main alone (0 = off)"))
    noise_refresh: int = Field(3, ge=1, description="re-measure the noise floor after this many generations, or "
                                                    "sooner when main's selection score moved by more than it")
    repair_turns: int = Field(2, ge=0, le=5, description="times a candidate that failed static or replay goes "
                                                          "back to its proposer with the failure (LLM proposer)")
    retire_after: int = Field(3, ge=1, description="retire a skill whose last N applications all lost")
    rerun_known: bool = Field(False, description=(
        "propose again a skill variant that an earlier run measured and rejected under this generation's exact "
        "conditions (same main tree, starting policy, settings, tasks and skill code: the same verdict at the "
        "same cost); off: the proposer goes on to what is not yet measured (meta_agent/skills/known.py)"))
    reuse_across_runs: bool = Field(True, description=(
        "copy a training an earlier run finished under the same inputs (harness tree, starting policy, seed, "
        "steps, tasks, settings, meta-agent's code) instead of training it again, and reuse sealed answers "
        "decoded for the same weights by any run; off: each run trains and decodes its own (the store: "
        "META_AGENT_CACHE/reuse, META_AGENT_REUSE=off turns it off everywhere; meta_agent/train_memo.py)"))
    gate: GateSettings = GateSettings()
    budget: BudgetSettings = BudgetSettings()
    executor: ExecutorSettings = Field(default_factory=ExecutorSettings, description=(
        "where a run's backtests, training runs and evaluations run (docs/scale.md)"))

    @model_validator(mode="before")
    @classmethod
    def _domain_defaults(cls, data: Any) -> Any:
        """Fill the domain's generation defaults in, so the run's saved config records the values it ran with
        and a later change of a default cannot change a resumed run. An explicit null selection_limit keeps
        its meaning (the whole split); train_steps has no such meaning, so a null is resolved too."""
        if not isinstance(data, dict) or ("selection_limit" in data and data.get("train_steps") is not None):
            return data
        name = data.get("domain", cls.model_fields["domain"].default)
        if not (isinstance(name, str) and DOMAINS.valid(name)):
            return data  # the field validator names the unknown domain (a plugin resolves its steps when read)
        entry = domain_entry(name)
        filled = {**data, "train_steps": data.get("train_steps") or entry.default_train_steps}
        filled.setdefault("selection_limit", entry.default_selection_limit)
        return filled

    @field_validator("proposer")
    @classmethod
    def _known_proposer(cls, name: str) -> str:
        if not PROPOSERS.valid(name):
            raise ValueError(f"unknown proposer {name!r}; available: {PROPOSERS.describe()}")
        return name

    @model_validator(mode="after")
    def _coder_needs_llm(self) -> EvolveConfig:
        if self.llm.coder != "builtin" and self.proposer in ("skills", "random", "random-matched"):
            raise ValueError(f"--coder {self.llm.coder} needs --proposer llm: the {self.proposer} proposer applies "
                             f"skills itself and runs no coding agent")
        return self

    @model_validator(mode="after")
    def _shards_add_up(self) -> EvolveConfig:
        pass_k = getattr(getattr(self, "code", None), "pass_k", None)
        if self.executor.eval_shards > 1 and self.domain == "code" and pass_k:
            raise ValueError(f"executor.eval_shards {self.executor.eval_shards} with code.pass_k {pass_k}: pass@k "
                             f"is estimated over the whole split and cannot be put together from shards; set one")
        return self

    @property
    def gate_tests(self) -> int:
        """Paired CIs a generation's gate may take (the Bonferroni count): K, plus the confirmation rung's."""
        return self.candidates + (self.confirm_top if self.confirm_steps else 0)

    @property
    def steps(self) -> int:
        """GRPO steps per training run: `train_steps`, else the domain's default."""
        return self.train_steps or domain_entry(self.domain).default_train_steps

    def result_settings(self) -> dict[str, Any]:
        """The settings that can change what a training or backtest measures (digests key on them)."""
        settings = self.model_dump(mode="json", exclude=SETTINGS_NOT_RESULTS)
        llm = settings.get("llm")
        if isinstance(llm, dict):
            llm.pop("cache_dir", None)
        return settings


def load_config_file(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as e:
        raise ConfigFileError(f"cannot read config file {path}: {e}") from e
    if not isinstance(data, dict):
        raise ConfigFileError(f"config file {path} must be a mapping of settings")
    return data


def overlay(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """`over` on top of `base`, a nested section key by key (`--model` keeps the file's `llm.api_base`);
    None means "not given" at any depth."""
    out = dict(base)
    for key, value in over.items():
        if value is None:
            continue
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = overlay(out[key], value)
        elif isinstance(value, Mapping):
            given = overlay({}, value)
            if given:  # a section of options none of which was given leaves the file's value alone
                out[key] = given
        else:
            out[key] = value
    return out


def build(model: type[BaseModel], file_values: Mapping[str, Any], cli_values: Mapping[str, Any]) -> Any:
    """The one way settings are layered, for every command: the model's defaults < `file_values` (a --config
    file, or the settings a run saved when it started) < the options given on the command line."""
    merged = overlay(file_values, cli_values)
    try:
        return model.model_validate(merged)
    except ValidationError as e:
        lines = [f"invalid setting for {model.__name__}:"]
        for err in e.errors():
            lines.append(f"  {'.'.join(str(p) for p in err['loc'])}: {err['msg']} (got {err.get('input')!r})")
        raise ConfigFileError("\n".join(lines)) from e
