"""A disk cache of chat replies, so a resumed or re-run generation does not pay twice for the same prompt.

The key is everything that decides a reply: model, endpoint, messages and tool schemas. A hit is
returned as the reply it was (`cached=True`), accounted as cached (no dollars, no budget) and still
written to the transcript. Entries are plain JSON files (`<key[:2]>/<key>.json`) written by rename,
so concurrent runs can share one cache.

Two rules keep a bad reply from coming back: an entry is served only once the agent loop has acted
on it (`mark_handled`: a reply whose handling crashed the process is asked for again, never replayed
into the same crash), and whatever an entry holds is read as untrusted (a damaged, oversized or
hand-edited entry is a miss, never an error) and bounded like a live reply (`reply.bounded`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from meta_agent.fsutil import atomic_write_text
from meta_agent.llm.reply import ChatReply, bounded
from meta_agent.untrusted_files import read_bytes

MAX_ENTRY_BYTES = 4_000_000
CACHE_DIR = "llm-cache"
"""The cache's folder in a run directory, unless `llm.cache_dir` names another."""


class CacheEntry(BaseModel):
    reply: ChatReply
    handled: bool = False
    """The agent loop acted on this reply without crashing: only such entries are served."""


class ResponseCache:
    def __init__(self, root: Path) -> None:
        self.root = root

    @staticmethod
    def key(model: str, api_base: str | None, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
            ) -> str:
        blob = json.dumps({"model": model, "api_base": api_base or "", "messages": messages, "tools": tools or []},
                          sort_keys=True, default=str)
        return hashlib.sha256(blob.encode("utf-8", "backslashreplace")).hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def _read(self, key: str) -> CacheEntry | None:
        path = self._path(key)
        try:
            if not path.is_file():
                return None
            return CacheEntry.model_validate_json(read_bytes(path, MAX_ENTRY_BYTES))
        except Exception:  # a cache entry is a hint: whatever is wrong with it, the model is asked instead
            return None

    def get(self, key: str) -> ChatReply | None:
        entry = self._read(key)
        if entry is None or not entry.handled:
            return None
        return bounded(entry.reply).model_copy(update={"cached": True, "attempts": 0, "latency_s": 0.0})

    def put(self, key: str, reply: ChatReply) -> None:
        """Store a reply not yet acted on (not served until `mark_handled`)."""
        entry = CacheEntry(reply=reply.model_copy(update={"cached": False}))
        atomic_write_text(self._path(key), entry.model_dump_json())

    def mark_handled(self, key: str) -> None:
        entry = self._read(key)
        if entry is not None and not entry.handled:
            atomic_write_text(self._path(key), entry.model_copy(update={"handled": True}).model_dump_json())
