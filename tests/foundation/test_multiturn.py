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


def test_the_cache_grows_in_place_holding_what_concatenation_holds() -> None:
    # transformers' DynamicCache copies the whole cache for every decoded token (a third of a decode step at
    # 1,500 tokens of context on 2 cores); ours writes each token once and reallocates only when full.
    import torch

    from meta_agent.multiturn import new_cache
    from meta_agent.policy import load_for_inference, tiny_policy

    config = load_for_inference(tiny_policy())[0].config
    grown, concatenated = new_cache(config), new_cache(config, growing=False)
    buffers = set()
    for step in range(300):
        k, v = torch.randn(2, 3, 1 if step else 40, 8), torch.randn(2, 3, 1 if step else 40, 8)
        assert all(torch.equal(a, b) for a, b in zip(grown.layers[0].update(k, v),
                                                     concatenated.layers[0].update(k, v), strict=True))
        buffers.add(grown.layers[0].key_buffer.data_ptr())
    assert grown.get_seq_length() == concatenated.get_seq_length() == 339
    assert len(buffers) == 2, "one buffer of 256, then one of 512: no copy per token"


def test_growing_and_concatenating_caches_give_the_same_replies(model_and_tok) -> None:  # type: ignore[no-untyped-def]
    model, tok = model_and_tok
    grown, concatenated = MultiTurnGreedy(model, tok), MultiTurnGreedy(model, tok, growing=False)
    convs = [_start("the parser drops a line " * 6), _start("y")]
    for turn in range(3):
        got = grown(convs, 40)  # 40 new tokens a turn: the buffers fill and are reallocated mid-reply
        assert got == concatenated(convs, 40), f"turn {turn}"
        convs = [[*c, {"role": "assistant", "content": t}, {"role": "user", "content": "ok\n" * 30}]
                 for c, t in zip(convs, got, strict=True)]
    assert grown.reused_tokens > 0
