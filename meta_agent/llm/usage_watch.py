"""Progress of a run's LLM sessions: the usage ledger (RUN/llm-usage.json, rewritten after every booked
call) watched from a thread, each change shown as one short line.

An LLM proposer's diagnosis or coder session can talk for minutes with nothing else to show; this says
that it is talking, and what it has cost so far. Display only: the budget checks read the ledger itself.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import ValidationError

from meta_agent.llm.accounting import LedgerState, Usage


def usage_text(total: Usage) -> str:
    """`LLM 12 calls · 48,210 tokens · $0.31 so far` (and the calls its cache answered, when any)."""
    cached = f" (+{total.cached_calls} from the cache)" if total.cached_calls else ""
    return f"LLM {total.calls} calls{cached} · {total.tokens:,} tokens · ${total.dollars:.2f} so far"


class UsageWatcher:
    def __init__(self, path: Path, show: Callable[[str], None], every_s: float = 2.0) -> None:
        self.path, self.show, self.every_s = path, show, every_s
        self.seen: tuple[int, int] | None = None
        self.stopped = threading.Event()

    def poll(self) -> None:
        """Show the totals if calls were booked since the last look (a torn or foreign file is skipped)."""
        try:
            total = LedgerState.model_validate_json(self.path.read_bytes()[:1 << 20]).total
        except (OSError, ValidationError):
            return
        now = (total.calls, total.cached_calls)
        if self.seen is None:
            self.seen = now  # what a resumed run had already spent is not news
            return
        if now != self.seen:
            self.seen = now
            self.show(usage_text(total))

    def _loop(self) -> None:
        while not self.stopped.wait(self.every_s):
            self.poll()


@contextmanager
def watching_usage(path: Path, show: Callable[[str], None], every_s: float = 2.0) -> Iterator[UsageWatcher]:
    watcher = UsageWatcher(path, show, every_s)
    watcher.seen = (0, 0) if not path.exists() else None
    watcher.poll()
    thread = threading.Thread(target=watcher._loop, name="llm-usage", daemon=True)
    thread.start()
    try:
        yield watcher
    finally:
        watcher.stopped.set()
        thread.join(timeout=5)
        watcher.poll()
