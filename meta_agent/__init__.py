"""meta-agent: RL training of LLM policies that evolves its own training harness."""

import os
import sys

# `python -m meta_agent` puts the current directory first on sys.path. Started from a harness
# checkout or a training output dir, that would let files a candidate wrote (a `yaml.py`, a
# `sandboxes/`) be imported into the trusted process; drop it before anything else is imported.
# (A candidate's own `meta_agent/` would be found before this file runs: the static stage rejects
# new top-level packages and sandbox outputs may not hold one, so none can be there.)
_started_with_dash_m = bool(sys.argv) and sys.argv[0] == "-m" and not sys.flags.safe_path
if _started_with_dash_m and sys.path and sys.path[0] in ("", os.getcwd()):
    sys.path.pop(0)

# litellm fetches a price list at import unless told to use its bundled copy; these
# machines (and many clusters) have no route to it.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

__version__ = "0.1.0"
