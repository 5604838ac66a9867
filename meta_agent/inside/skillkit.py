"""skillkit: the small editing toolkit a skill's apply.py uses on a harness checkout.

This file is copied, as `skillkit.py`, next to the skill inside the sandbox, so it
must import nothing from meta_agent. Every edit is deterministic and precise:
functions are inserted before a registry and registered in it (found with `ast`,
not by line numbers), and harness.yaml is edited round-trip so its comments stay.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any


class EditError(RuntimeError):
    """The harness does not have the shape this edit expects (say what is missing)."""


class AlreadyApplied(EditError):
    """The change is already in the harness."""


def read(root: Path, rel: str) -> str:
    path = root / rel
    if not path.is_file():
        raise EditError(f"{rel} not found in the harness checkout")
    return path.read_text(encoding="utf-8")


def write(root: Path, rel: str, text: str) -> None:
    if rel.endswith(".py"):
        compile(text, rel, "exec", dont_inherit=True)  # never leave a Python file that does not compile
    (root / rel).write_text(text, encoding="utf-8")


def _registry(tree: ast.Module, name: str) -> ast.stmt:
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return node
    raise EditError(f"no module-level registry {name} found")


def add_to_registry(root: Path, rel: str, registry: str, key: str, source: str, func_name: str) -> None:
    """Insert `source` (defining `func_name`) before `registry = {...}` in `rel` and register it as `key`."""
    text = read(root, rel)
    tree = ast.parse(text)
    node = _registry(tree, registry)
    value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
    if not isinstance(value, ast.Dict):
        raise EditError(f"{rel}: {registry} is not a dict literal")
    if any(isinstance(k, ast.Constant) and k.value == key for k in value.keys):
        raise AlreadyApplied(f"{rel}: {registry} already has {key!r}")
    if any(isinstance(n, ast.FunctionDef) and n.name == func_name for n in tree.body):
        raise AlreadyApplied(f"{rel}: function {func_name} already exists")
    entries = [
        f"{ast.get_source_segment(text, k)}: {ast.get_source_segment(text, v)}"
        for k, v in zip(value.keys, value.values, strict=True)
        if k is not None
    ]
    entries.append(f'"{key}": {func_name}')
    head = (f"{registry}: {ast.get_source_segment(text, node.annotation)}" if isinstance(node, ast.AnnAssign)
            else registry)
    statement = f"{head} = {{\n" + "".join(f"    {e},\n" for e in entries) + "}\n"
    lines = text.splitlines(keepends=True)
    lines[node.lineno - 1 : node.end_lineno] = [source.strip("\n") + "\n\n\n" + statement]
    write(root, rel, "".join(lines))


def replace_function(root: Path, rel: str, func_name: str, source: str) -> None:
    """Replace the module-level function `func_name` in `rel` with `source`."""
    text = read(root, rel)
    tree = ast.parse(text)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == func_name:
            lines = text.splitlines(keepends=True)
            first = (node.decorator_list[0].lineno if node.decorator_list else node.lineno) - 1
            new = source.strip("\n") + "\n"
            if "".join(lines[first:node.end_lineno]).strip() == new.strip():
                raise AlreadyApplied(f"{rel}: {func_name} already has this body")
            lines[first:node.end_lineno] = [new]
            write(root, rel, "".join(lines))
            return
    raise EditError(f"{rel}: no function {func_name} to replace")


def _yaml() -> Any:
    from ruamel.yaml import YAML

    y = YAML()
    y.preserve_quotes = True
    y.indent(mapping=2, sequence=4, offset=2)
    return y


def _walk(data: Any, dotted: str, create: bool) -> tuple[Any, str]:
    *parents, leaf = dotted.split(".")
    for part in parents:
        if part not in data:
            if not create:
                raise EditError(f"harness.yaml has no {dotted}")
            data[part] = {}
        data = data[part]
    return data, leaf


def get_setting(root: Path, dotted: str, default: Any = None) -> Any:
    data = _yaml().load(read(root, "harness.yaml"))
    try:
        parent, leaf = _walk(data, dotted, create=False)
    except EditError:
        return default
    return parent.get(leaf, default)


def set_setting(root: Path, dotted: str, value: Any) -> Any:
    """Set a harness.yaml value (dotted path), keeping comments; returns the old value."""
    y = _yaml()
    path = root / "harness.yaml"
    data = y.load(read(root, "harness.yaml"))
    parent, leaf = _walk(data, dotted, create=True)
    old = parent.get(leaf)
    if old == value:
        raise AlreadyApplied(f"harness.yaml {dotted} is already {value!r}")
    parent[leaf] = value
    with path.open("w", encoding="utf-8") as f:
        y.dump(data, f)
    return old


def add_to_list_setting(root: Path, dotted: str, item: Any) -> None:
    current = list(get_setting(root, dotted, []) or [])
    if item in current:
        raise AlreadyApplied(f"harness.yaml {dotted} already contains {item!r}")
    set_setting(root, dotted, [*current, item])
