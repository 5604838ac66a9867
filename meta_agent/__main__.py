"""`python -m meta_agent ...` is the same as the `meta-agent` command."""

from meta_agent.cli import main

main()
