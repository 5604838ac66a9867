"""The efficacy benchmark (`bench/efficacy.py`): does evolving the harness beat leaving it alone?

Per seed, from the same initial policy and harness: the evolved harness, the static harness at equal
policy compute, the static harness at the evolved run's *total* compute (search included), and a
reference harness set up the way this field sets up GRPO. All are scored on the sealed test split;
per-task results are saved, and every number in the report is computed from them (docs/evolve.md).
"""
