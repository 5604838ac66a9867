"""Names the SWE task builder and the SWE domain's settings share (a module with no imports)."""

DEFAULT_TASKSET = "default"
"""Name of the task set built from the pinned default projects (`meta-agent tasks build --default`)."""
