"""The layout's promises: no import cycle, light modules stay light, `sandboxes` stands alone, and a
module named in a string (a registry entry, an `import_module`, a `python -m`) exists and counts."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("meta_agent", "sandboxes")


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """Modules of ours this file imports at module level (type-only imports count: they are a dependency too)."""
    tree = ast.parse(path.read_text())
    me = _module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found: set[str] = set()
    body = [*tree.body, *(n for top in tree.body if isinstance(top, ast.If) for n in top.body)]
    for node in body:
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != me:
                found.add(name)
    return found


_NAMED = re.compile(r"^(?:meta_agent|sandboxes)(?:\.\w+)*(?::\w+)?$")


def _named_in_strings(path: Path) -> list[tuple[str, bool]]:
    """(name, is an import) for every string literal naming a module of ours. A `module:Class` string is a
    plugin registry entry, loaded on use like an entry point; a plain module name is imported by name
    (`import_module`, `python -m`, a preload list) and counts as an import."""
    return [(node.value, ":" not in node.value) for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _NAMED.match(node.value)]


def _graph(strings: bool = True) -> dict[str, set[str]]:
    """Module -> the modules of ours it imports at module level, and (`strings`) those it imports by name."""
    files = [p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py") if "_data" not in p.parts]
    modules = {_module_name(p) for p in files}
    graph = {_module_name(p): _imports(p, modules) for p in files}
    if strings:
        for p in files:
            me = _module_name(p)
            graph[me] |= {name for name, imports in _named_in_strings(p) if imports and name in modules and name != me}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _packages(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The same graph between subpackages (meta_agent.backtest, meta_agent.domains, ...)."""
    def pkg(m: str) -> str:
        return ".".join(m.split(".")[:2])

    out: dict[str, set[str]] = {}
    for m, deps in graph.items():
        out.setdefault(pkg(m), set()).update(pkg(d) for d in deps if pkg(d) != pkg(m))
    return out


def test_no_import_cycle_between_modules() -> None:
    graph = _graph()
    assert sum(len(d) for d in graph.values()) > 200, "the graph holds the package's imports"
    cycles = _cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_every_module_named_in_a_string_exists_and_imports_by_name_are_in_the_graph() -> None:
    files = [p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py") if "_data" not in p.parts]
    modules = {_module_name(p): p for p in files}
    named = {(_module_name(p), name, imports) for p in files for name, imports in _named_in_strings(p)}
    assert {n for _, n, imports in named if imports} >= {"meta_agent.tracking"}, "the scan sees `python -m`"
    assert {n for _, n, imports in named if not imports} >= {"sandboxes.bwrap:BwrapSandbox"}, "and registries"
    for where, name, _ in sorted(named):
        module, _, cls = name.partition(":")
        assert module in modules, f"{where} names {name!r}, which is not a module (renamed or removed?)"
        if cls:
            defined = {n.name for n in ast.parse(modules[module].read_text()).body if isinstance(n, ast.ClassDef)}
            assert cls in defined, f"{where} names {name!r}, but {module} defines no class {cls}"
    loose = _graph(strings=False)
    added = sum(len(deps) for deps in _graph().values()) - sum(len(deps) for deps in loose.values())
    assert added >= 1, "imports by name count in the cycle tests"


def test_no_import_cycle_between_subpackages() -> None:
    cycles = _cycles(_packages(_graph()))
    assert not cycles, "subpackages that import each other:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def _imported_by(statement: str) -> set[str]:
    code = f"import sys; {statement}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    return set(out.stdout.split())


def test_the_config_imports_no_domain_implementation() -> None:
    loaded = _imported_by("import meta_agent.config")
    heavy = {"meta_agent.domains.math", "meta_agent.domains.code", "meta_agent.domains.swe", "torch",
             "transformers", "reasoning_gym", "trl", "litellm", "meta_agent.swe.build"}
    assert not loaded & heavy, f"importing the config pulls in {sorted(loaded & heavy)}"


def test_sandboxes_is_importable_alone() -> None:
    loaded = _imported_by("import sandboxes, sandboxes.bwrap, sandboxes.docker, sandboxes.doctor")
    assert not {m for m in loaded if m.startswith("meta_agent")}


def test_one_name_per_class() -> None:
    """A reader who greps for a class finds one: two `Executor`s or two `RunResult`s read as one thing."""
    where: dict[str, list[str]] = {}
    for pkg in PACKAGES:
        for p in (ROOT / pkg).rglob("*.py"):
            for node in ast.parse(p.read_text()).body:
                if isinstance(node, ast.ClassDef):
                    where.setdefault(node.name, []).append(_module_name(p))
    twice = {name: mods for name, mods in where.items() if len(mods) > 1}
    assert not twice, f"class names defined more than once: {twice}"


def test_sandbox_side_code_is_shipped_as_files_never_imported_and_imports_nothing_of_ours() -> None:
    """meta_agent/inside/ runs in sandboxes: the trusted side loads it only through `inside.source/path`."""
    graph = _graph()
    scripts = {m for m in graph if m.startswith("meta_agent.inside.")}
    assert {"meta_agent.inside.coder_sandbox", "meta_agent.inside.skillkit", "meta_agent.inside.pytest_runner",
            "meta_agent.inside.mini_driver", "meta_agent.inside.sandbox_launch"} <= scripts
    importers = {m: sorted(deps & scripts) for m, deps in graph.items() if deps & scripts}
    assert importers == {}, "trusted code imports sandbox-side scripts as modules"
    assert {m: sorted(graph[m]) for m in scripts if graph[m]} == {}, "a sandbox-side script imports meta-agent"
