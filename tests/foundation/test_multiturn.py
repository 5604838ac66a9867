"""Multi-turn greedy replies that reuse each conversation's cache give the replies re-encoding gives.

The model is the tiny random policy in float64, so that the shapes the cache changes (padding, how much is
encoded at once) cannot flip a greedy near-tie: any difference here is a wrong position, slot or token."""

from __future__ import annotations

import pytest

from meta_agent.inference import greedy_chat
from meta_agent.multiturn import MultiTurnGreedy
from meta_agent.policy import load_for_inference, tiny_policy


@pytest.fixture(scope="module")
def model_and_tok():  # type: ignore[no-untyped-def]
    model, tok = load_for_inference(tiny_policy())
    return model.double(), tok


def _start(task: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "You fix bugs. Reply with one command."},
            {"role": "user", "content": f"Task: {task}"}]


def test_each_turn_matches_re_encoding_while_episodes_end_and_observations_differ(model_and_tok) -> None:  # type: ignore[no-untyped-def]
    model, tok = model_and_tok
    cached = MultiTurnGreedy(model, tok)
    convs = [_start("the sort is unstable"), _start("a longer statement " * 12), _start("x")]
    plain = [list(c) for c in convs]
    active = [0, 1, 2]
    for turn in range(4):
        got = cached([convs[i] for i in active], 12)
        want = greedy_chat(model, tok, [plain[i] for i in active], max_new_tokens=12, batch_size=8)
        assert got == want, f"turn {turn}"
        for i, text in zip(active, got, strict=True):
            obs = f"exit code {turn}\n" + "output line\n" * (i * 3 + turn)
            for c in (convs[i], plain[i]):
                c += [{"role": "assistant", "content": text}, {"role": "user", "content": obs}]
        if turn == 1:
            active = [0, 2]  # episode 1 submitted: the batch shrinks and rows change slots
    assert cached.reused_tokens > cached.prompt_tokens / 3, "later turns came from the cache"


def test_a_new_episode_is_encoded_whole(model_and_tok) -> None:  # type: ignore[no-untyped-def]
    model, tok = model_and_tok
    cached = MultiTurnGreedy(model, tok)
    first = cached([_start("one"), _start("two")], 8)
    assert cached.reused_tokens == 0
    # the same system prompt opens the next batch's episodes, but they continue none of the last call's
    again = cached([_start("three"), _start("a fourth, longer task")], 8)
    assert cached.reused_tokens == 0
    assert first[0] == greedy_chat(model, tok, [_start("one")], max_new_tokens=8)[0]
    assert again == greedy_chat(model, tok, [_start("three"), _start("a fourth, longer task")], max_new_tokens=8)
