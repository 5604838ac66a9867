"""Defaults shared by the library, the `tasks` commands, the SWE domain's settings and docs/swe-tasks.md
(which a test checks). Kept in a module of their own, with no imports, so the CLI and the config can
use them without loading the builder.
"""

from __future__ import annotations

DEFAULT_TASKSET = "default"
"""Name of the task set built from the pinned default projects (`meta-agent tasks build --default`)."""
DEFAULT_MAX_PER_PROJECT = 100
"""Instances kept per project unless asked otherwise; the default task set is built with it."""
