"""Name -> lazily imported class maps, so adding a backend, domain or proposer is one file and one line.

A name is either registered here (`"bwrap"`) or a full `module:attr` spec, so a plugin defined
outside the package (`mypkg.sandbox:MySandbox`) plugs in without editing it. It lives in
`sandboxes` (importable alone) and meta-agent's own registries use the same class.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownName(KeyError):
    """A name that is neither registered nor an importable `module:attr`; the message lists what exists."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown name"


def is_spec(name: str) -> bool:
    """True for a `module:attr` spec (a plugin), False for a short registered name."""
    module, sep, attr = name.partition(":")
    return bool(sep and module and attr)


def load_spec(spec: str) -> object:
    """The object a `module:attr` spec names; ImportError/AttributeError say which part is wrong."""
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise UnknownName(f"cannot import module {module_name!r} of {spec!r}: {e}") from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise UnknownName(f"module {module_name!r} has no {attr!r} (from {spec!r})") from None


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

    def valid(self, name: str) -> bool:
        """A registered name or a `module:attr` spec (which is only imported by `get`)."""
        return name in self._entries or is_spec(name)

    def describe(self) -> str:
        return f"{' | '.join(self.names())} (or module:Class)"

    def get(self, name: str) -> type[T]:
        """The registered class, or the class a `module:attr` spec names; an unknown name raises KeyError
        listing what is available."""
        if name in self._entries:
            target = self._entries[name]
        elif is_spec(name):
            target = name
        else:
            raise UnknownName(f"unknown {self.kind} {name!r}; available: {', '.join(self.names())}, "
                              f"or a plugin as module:Class") from None
        cls: type[T] = load_spec(target)  # type: ignore[assignment]
        return cls
