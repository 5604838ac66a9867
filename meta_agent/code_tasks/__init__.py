"""Code tasks: problems with visible and hidden tests, their sources, and sandboxed test execution.

The sealed side of the code domain (meta_agent/domains/code.py) builds on these; nothing here is
ever copied into a harness sandbox except `runner.py` and `child.py`, which run in the sealed
evaluator's own sandbox session.
"""
