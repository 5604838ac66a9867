"""Benchmarks: scripts (`python bench/NAME.py`) that print a measured ratio or table, and `efficacy_lib`, the
efficacy benchmark's arms, splits and report. None of it ships in the meta_agent package."""
