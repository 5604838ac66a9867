"""Name -> lazily imported class maps, so adding a backend/domain/proposer is one file and one line."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps a short name to `"module:attr"` and imports it only when asked for."""

    def __init__(self, kind: str, entries: dict[str, str]) -> None:
        self.kind = kind
        self._entries = dict(entries)

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def get(self, name: str) -> type[T]:
        """The registered class; an unknown name raises KeyError listing what is available."""
        try:
            target = self._entries[name]
        except KeyError:
            raise KeyError(f"unknown {self.kind} {name!r}; available: {', '.join(self.names())}") from None
        module_name, attr = target.split(":")
        cls: type[T] = getattr(importlib.import_module(module_name), attr)
        return cls
