"""Rough token counts where loading a tokenizer is not worth it (budgets, prompt packing)."""

CHARS_PER_TOKEN = 4
"""English text and code average about four characters per token in the tokenizers meta-agent meets."""


def approx_tokens(text: str) -> int:
    return len(text) // CHARS_PER_TOKEN + 1
