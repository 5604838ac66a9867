"""Typer sub-apps, one file per command group; mounted by meta_agent.cli."""
