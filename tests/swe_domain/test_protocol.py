"""The sealed SWE protocol can be passed: an agent that knows the fix resolves every instance within the
default turns and tokens, from a statement that names the failing tests but never the bug's place or fix."""

from __future__ import annotations

import os

import pytest

from meta_agent.domains.settings import ScaffoldSettings, SweSettings
from meta_agent.domains.swe import SweDomain
from meta_agent.domains.swe_scaffold import first_messages
from meta_agent.policy import smollm2_tokenizer
from meta_agent.swe.competent import CompetentAgent, fix_commands, patch_edits
from meta_agent.swe.instance import SweInstance
from meta_agent.swe.statement import changed_lines, quotes_patch

pytestmark = pytest.mark.slow  # real episodes: commands and sealed test runs in the sandbox

SANDBOX = os.environ.get("META_AGENT_TEST_SANDBOX", "bwrap")


def _every_instance(domain: SweDomain) -> list[SweInstance]:
    return [inst for split in ("train", "selection", "test") for inst in domain.instances(split)]  # type: ignore[arg-type]


def test_a_competent_agent_resolves_every_instance_within_the_default_protocol(calc_taskset: str) -> None:
    domain = SweDomain(SweSettings(taskset=calc_taskset, sandbox=SANDBOX))  # the default scaffold: the sealed protocol
    instances = _every_instance(domain)
    agent = CompetentAgent(instances, smollm2_tokenizer())
    result = domain.score(agent, instances, "test", "competent agent")
    failed = [(r.task_id, r.detail) for r in result.results if not r.correct]
    assert not failed, f"the protocol cannot be passed on these: {failed}"
    protocol = ScaffoldSettings()
    assert not agent.cut and agent.tokens_needed <= protocol.turn_tokens
    assert all(r.detail.startswith("submit after") for r in result.results), "it submits within the turns"
    assert max(len(fix_commands(i)) for i in instances) < protocol.max_turns, "with turns to spare for exploring"


def test_the_old_protocol_could_not_be_passed(calc_taskset: str) -> None:
    """3 turns of 48 tokens, the protocol before: no room for the edit, so nothing any policy did could score."""
    domain = SweDomain(SweSettings(taskset=calc_taskset, sandbox=SANDBOX,
                                   scaffold=ScaffoldSettings(max_turns=3, turn_tokens=48)))
    instances = domain.instances("test")
    agent = CompetentAgent(instances, smollm2_tokenizer())
    result = domain.score(agent, instances, "test", "competent agent")
    assert agent.cut and not any(r.correct for r in result.results)


def _assert_shows_the_failure_never_the_fix(inst: SweInstance) -> None:
    shown = "\n".join(m["content"] for m in first_messages(inst))
    assert all(test in shown for test in inst.FAIL_TO_PASS[:3]), "an issue names what fails"
    assert not quotes_patch(shown, inst.patch) and not any(line in shown for line in changed_lines(inst.patch))
    assert inst.mutation is not None
    assert f"{inst.mutation.file}:{inst.mutation.line}" not in shown and f"line {inst.mutation.line}" not in shown
    assert {e.path for e in patch_edits(inst.patch)} == {inst.mutation.file}, "the fix is read from the patch"


def test_what_the_policy_is_shown_names_the_failing_tests_never_the_bug_site_or_fix(calc_taskset: str) -> None:
    domain = SweDomain(SweSettings(taskset=calc_taskset, sandbox=SANDBOX))
    for inst in _every_instance(domain):
        _assert_shows_the_failure_never_the_fix(inst)


def test_every_easy_test_instance_of_the_default_set_can_be_passed() -> None:
    """The set `make demo` runs (shipped, installed on first use): under the sealed protocol the scripted agent
    resolves every easy *test* instance, each statement naming what fails and never where or how to fix it."""
    domain = SweDomain(SweSettings(sandbox=SANDBOX, tiers=["easy"], train_size=None, selection_size=None,
                                   test_size=None))
    instances = domain.instances("test")
    assert len(instances) >= 50, "the easy tier's sealed test split holds at least 50 instances"
    for inst in instances:
        _assert_shows_the_failure_never_the_fix(inst)
    agent = CompetentAgent(instances, smollm2_tokenizer())
    result = domain.score(agent, instances, "test", "competent agent")
    failed = [(r.task_id, r.detail) for r in result.results if not r.correct]
    assert not failed, f"the protocol cannot be passed on these: {failed}"
    assert not agent.cut and agent.tokens_needed <= ScaffoldSettings().turn_tokens


def test_a_user_checks_the_protocol_on_a_task_set_from_the_command_line(calc_taskset: str) -> None:
    from typer.testing import CliRunner

    from meta_agent.commands.tasks import app

    runner = CliRunner()
    ok = runner.invoke(app, ["protocol", "--taskset", calc_taskset, "--split", "test", "--sandbox", SANDBOX])
    said = " ".join(ok.output.split())
    assert ok.exit_code == 0, ok.output
    assert "2 of 2 resolved by the scripted agent under 6 turns of 128 tokens" in said, said
    tight = runner.invoke(app, ["protocol", "--taskset", calc_taskset, "--turn-tokens", "48", "--sandbox", SANDBOX])
    assert tight.exit_code == 1 and "not resolved" in tight.output and "0 of 2 resolved" in " ".join(
        tight.output.split()), tight.output
    bad = runner.invoke(app, ["protocol", "--taskset", calc_taskset, "--split", "dev"])
    assert bad.exit_code == 2 and "train, selection, test" in bad.output
