"""The run's LLM usage shown as it grows (llm/usage_watch.py)."""

from __future__ import annotations

import time
from pathlib import Path

from meta_agent.llm.accounting import Ledger
from meta_agent.llm.usage_watch import UsageWatcher, watching_usage


def test_each_booked_call_is_shown_once_and_a_torn_ledger_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "llm-usage.json"
    shown: list[str] = []
    with watching_usage(path, shown.append, every_s=0.05):
        Ledger(path).record("coder", "g0", 1200, 300, 0.0125)
        deadline = time.monotonic() + 10
        while not shown and time.monotonic() < deadline:
            time.sleep(0.05)
        path.write_text('{"total": {"calls": ')  # torn: skipped, nothing raised
        time.sleep(0.2)
    assert shown == ["LLM 1 calls · 1,500 tokens · $0.01 so far"], shown


def test_a_resumed_run_shows_only_what_it_spends_itself(tmp_path: Path) -> None:
    path = tmp_path / "llm-usage.json"
    ledger = Ledger(path)
    ledger.record("diagnostician", "g0", 100, 10, None)
    shown: list[str] = []
    watcher = UsageWatcher(path, shown.append)
    watcher.poll()
    assert shown == [], "what the run spent before this process is not news"
    ledger.record("coder", "g0", 100, 10, None, cached=True)
    watcher.poll()
    assert shown == ["LLM 1 calls (+1 from the cache) · 110 tokens · $0.00 so far"]
