"""meta-agent: RL training of LLM policies that evolves its own training harness."""

import os

# litellm fetches a price list at import unless told to use its bundled copy; these
# machines (and many clusters) have no route to it.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

__version__ = "0.1.0"
