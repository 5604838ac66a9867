"""The journal key grammar and candidate ids: one module builds and parses them (old runs resume by them)."""

from __future__ import annotations

import pytest

from meta_agent.journal_keys import (
    COMBINED,
    GRAMMAR,
    CandidateId,
    cand_dir,
    cand_key,
    final_key,
    gen_dir,
    gen_key,
    generation_of,
    merge_key,
    slot_of_workspace,
    time_key,
)


def test_keys_are_spelled_as_runs_already_on_disk_spell_them() -> None:
    assert gen_key(3, "main-train") == "g3/main-train"
    assert gen_key(0, "") == "g0/"  # the prefix of every key of generation 0
    assert cand_key(1, 2, "verdict") == "g1/c2/verdict"
    assert cand_key(1, 2, "train", tag=COMBINED) == "g1/c2+combined/train"
    assert merge_key(4, 0) == "g4/merge/c0"
    assert final_key("static-g2") == "final/static-g2"
    assert (gen_dir(7), cand_dir(1), cand_dir(1, COMBINED)) == ("gen-007", "cand-1", "cand-1+combined")


def test_a_candidate_id_round_trips_and_names_its_branch() -> None:
    cid = CandidateId("20261126-120000-ab12", 2, 1)
    assert str(cid) == "20261126-120000-ab12/2-1"
    assert CandidateId.parse(str(cid)) == cid
    assert CandidateId.parse(str(cid) + COMBINED) == cid, "a combination's stage id names the same candidate"
    assert cid.branch == "cand/20261126-120000-ab12/2-1"
    assert cid.key("created") == "g2/c1/created"
    assert CandidateId.parse("run/with/slashes/10-11") == CandidateId("run/with/slashes", 10, 11)


@pytest.mark.parametrize("text", ["", "2-1", "run/2", "run/a-1", "run/2-1+other", "run/2-1/x", "trial/fix-skill"])
def test_what_is_not_a_candidate_id_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a candidate id"):
        CandidateId.parse(text)


def test_generation_and_slot_are_read_back() -> None:
    assert generation_of("g12/c0/verdict") == 12
    assert generation_of("final/compare") is None
    assert generation_of("gx/start") is None
    assert slot_of_workspace("/runs/r/gen-003/cand-1/edit") == (3, 1)
    assert slot_of_workspace("/somewhere/else") is None


@pytest.mark.parametrize("key", ["run/start", "run/done", "g0/start", "g0/noise-0", "g1/c0/static@2",
                                 "g1/c0/repair-1/time", "g0/c1+combined/merge/time", "g0/parents/1/time",
                                 "g2/confirm/control-train", "g0/merge/main-replay-0", "g3/merge/c1",
                                 "final/static-g1", "final/evolved-test", time_key(cand_key(0, 1, "commit"))])
def test_the_grammar_holds_every_key_the_loop_writes(key: str) -> None:
    assert GRAMMAR.match(key)


@pytest.mark.parametrize("key", ["g0/../x", "gx/start", "g0/c0/Static", "run/other", "g0/c0/verdict/extra", ""])
def test_the_grammar_refuses_what_the_loop_never_writes(key: str) -> None:
    assert not GRAMMAR.match(key)
