"""A disk cache of chat replies, so a resumed or re-run generation does not pay twice for the same prompt.

The key is everything that decides a reply: model, endpoint, messages and tool schemas. A hit is
returned as the reply it was (`cached=True`), accounted as cached (no dollars, no budget) and still
written to the transcript. Entries are plain JSON files (`<key[:2]>/<key>.json`) written by rename,
so concurrent runs can share one cache; a damaged entry is a miss, never an error.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from meta_agent.errors import ContractError
from meta_agent.fsutil import atomic_write_text
from meta_agent.llm.reply import ChatReply
from meta_agent.untrusted_files import read_bytes

MAX_ENTRY_BYTES = 4_000_000
CACHE_DIR = "llm-cache"
"""The cache's folder in a run directory, unless `llm.cache_dir` names another."""


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

    def get(self, key: str) -> ChatReply | None:
        path = self._path(key)
        if not path.is_file():
            return None
        try:
            reply = ChatReply.model_validate_json(read_bytes(path, MAX_ENTRY_BYTES))
        except (ContractError, ValidationError, ValueError):
            return None
        return reply.model_copy(update={"cached": True, "attempts": 0, "latency_s": 0.0})

    def put(self, key: str, reply: ChatReply) -> None:
        atomic_write_text(self._path(key), reply.model_copy(update={"cached": False}).model_dump_json())
