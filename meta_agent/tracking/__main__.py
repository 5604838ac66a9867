"""`python -m meta_agent.tracking RUN BACKEND`: the child process of `sync_tracker`."""

import sys
from pathlib import Path

from meta_agent.errors import UserError
from meta_agent.tracking.export import export_run

if __name__ == "__main__":
    run_dir, tracker = Path(sys.argv[1]), sys.argv[2]
    try:
        export_run(run_dir, tracker)  # type: ignore[arg-type]
    except UserError as e:  # bad input: one line for the parent to pass on (an internal bug keeps its traceback)
        print(e, file=sys.stderr)
        sys.exit(2)
