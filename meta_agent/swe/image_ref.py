"""Container image names a task file may give: checked against Docker's reference grammar, nothing else.

An instance's image name reaches the Docker engine's API (never a shell), but it is also printed, logged and
put into commands a user copies, so a task file gets no room to smuggle anything in: only a plain
`[registry[:port]/]path[:tag][@sha256:digest]` reference of at most 255 characters is accepted.
"""

from __future__ import annotations

import re

_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN = r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?))*(?::[0-9]+)?"
_REFERENCE = re.compile(
    rf"(?:{_DOMAIN}/)?{_COMPONENT}(?:/{_COMPONENT})*(?::[\w][\w.-]{{0,127}})?(?:@sha256:[a-f0-9]{{64}})?"
)
MAX_LENGTH = 255


def image_reference(name: str) -> str:
    """`name` if it is a plain image reference; else ValueError saying why."""
    if not isinstance(name, str) or not name:
        raise ValueError("an image name is a non-empty string such as 'swebench/sweb.eval.x86_64.x:latest'")
    if len(name) > MAX_LENGTH:
        raise ValueError(f"{name[:80]!r}...: an image name has at most {MAX_LENGTH} characters")
    if _REFERENCE.fullmatch(name) is None:
        raise ValueError(f"{name[:120]!r} is not an image name: only [registry/]path[:tag][@sha256:digest] with "
                         "lowercase path components is accepted (no spaces, quotes or shell characters)")
    return name


def with_tag(name: str) -> str:
    """The name as the engine lists it: an untagged, undigested name means `:latest`."""
    last = name.rsplit("/", 1)[-1]
    return name if (":" in last or "@" in name) else f"{name}:latest"


def swebench_image_id(instance_id: str) -> str:
    """SWE-bench's spelling of an instance id in image names: `__` becomes `_1776_`, all lowercase."""
    return instance_id.replace("__", "_1776_").lower()
