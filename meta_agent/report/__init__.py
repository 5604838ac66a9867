"""Rollout reports (what the policy did and how it failed) and lineage views."""
