"""Reviewing an evolution from git alone: every candidate with its verdict (`history`), one candidate in
full (`show`), and putting a finished run's candidate branches away (`prune`)."""
