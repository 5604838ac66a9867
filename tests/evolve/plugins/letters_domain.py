"""A domain defined outside meta-agent, as a user would write one: counting letters in words.

It trains with the math harness module (answers are numbers on an 'Answer:' line) and reuses the
math domain's verifier and evaluation protocol; its tasks, splits and settings are its own.
"""

from __future__ import annotations

import random

from pydantic import BaseModel, Field

from meta_agent.contract import Task
from meta_agent.domains.math import MathDomain

WORDS = ["banana", "apple", "mississippi", "letter", "committee", "balloon", "bookkeeper", "coffee",
         "address", "success", "assessment", "parallel", "tomorrow", "occurrence", "grammar", "pepper"]


class LettersSettings(BaseModel):
    train_size: int = Field(24, ge=1)
    selection_size: int = Field(6, ge=1)
    test_size: int = Field(6, ge=1)
    eval_max_new_tokens: int = Field(6, ge=1)
    eval_batch_size: int = Field(16, ge=1)


class LettersDomain(MathDomain):
    name = "letters"
    settings_model = LettersSettings
    default_train_steps = 1
    default_selection_limit = 4
    harness_domain = "math"

    def tasks(self, split):  # type: ignore[no-untyped-def]
        if split not in self._cache:
            rng = random.Random({"train": 1, "selection": 2, "test": 3}[split])
            out = []
            for i in range(self._size(split)):
                word, letter = rng.choice(WORDS), rng.choice("aeiouptsl")
                out.append(Task(id=f"letters-{split}-{i}", prompt=f"How many times does '{letter}' occur in "
                                f"'{word}'? End with 'Answer: <number>'.", answer=str(word.count(letter))))
            self._cache[split] = out
        return self._cache[split]
