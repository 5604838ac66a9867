"""The training harness: prompts, rewards, filters, diagnostics, curriculum and GRPO settings.

Run only as `python -m harness <verb>` from the repo root (see harness/__main__.py).
meta-agent evolves this code; README.md maps which file does what.
"""
