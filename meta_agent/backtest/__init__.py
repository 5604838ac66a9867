"""Backtest cascade (static -> replay -> train) and the statistics behind the promotion gate."""
