"""Bug injection by AST mutation, editing only the mutated node's source span.

Each `Mutation` replaces one span of the original text (an operator token, an expression,
or whole statement lines), so the file keeps its formatting and comments and the gold
patch is one small hunk. The AST finds *where* a mutation is meaningful; the text edit
keeps *what changes* minimal. Finding is deterministic; `order_mutations` shuffles by seed.
"""

from __future__ import annotations

import ast
import hashlib
import random
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass

OPERATORS = ("compare_op", "arith_op", "bool_op", "off_by_one", "negate_cond", "drop_stmt", "wrong_return",
             "swap_args")

_CMP: dict[type[ast.cmpop], tuple[str, str]] = {
    # op: (regex that finds it in the gap between operands, replacement)
    ast.Lt: (r"(?<![<>=!])<(?![<=])", "<="),
    ast.LtE: (r"<=", "<"),
    ast.Gt: (r"(?<![<>=-])>(?![>=])", ">="),
    ast.GtE: (r">=", ">"),
    ast.Eq: (r"==", "!="),
    ast.NotEq: (r"!=", "=="),
    ast.In: (r"\bin\b", "not in"),
    ast.NotIn: (r"\bnot\s+in\b", "in"),
    ast.Is: (r"\bis\b", "is not"),
    ast.IsNot: (r"\bis\s+not\b", "is"),
}
_BIN: dict[type[ast.operator], tuple[str, str]] = {
    ast.Add: (r"(?<![+=])\+(?![+=])", "-"),
    ast.Sub: (r"(?<![-=])-(?![-=>])", "+"),
    ast.Mult: (r"(?<!\*)\*(?![*=])", "//"),
    ast.FloorDiv: (r"//(?!=)", "/"),
    ast.Div: (r"(?<!/)/(?![/=])", "//"),
    ast.Mod: (r"%(?!=)", "//"),
    ast.Pow: (r"\*\*(?!=)", "*"),
    ast.LShift: (r"<<(?!=)", ">>"),
    ast.RShift: (r">>(?!=)", "<<"),
    ast.BitAnd: (r"&(?!=)", "|"),
    ast.BitOr: (r"\|(?!=)", "&"),
    ast.BitXor: (r"\^(?!=)", "|"),
}
_AUG: dict[type[ast.operator], tuple[str, str]] = {
    ast.Add: (r"\+=", "-="),
    ast.Sub: (r"-=", "+="),
    ast.BitOr: (r"\|=", "&="),
}
_PARSE_LOCK = threading.Lock()
_SIMPLE = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant)
_DROPPABLE = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Continue, ast.Break, ast.Delete, ast.Raise)
_SYMMETRIC_CALLS = frozenset({"max", "min", "print", "set", "frozenset"})


@dataclass(frozen=True)
class Mutation:
    """Replace source[start:end] of `file` with `replacement` (lines are 1-based, inclusive)."""

    operator: str
    file: str
    line: int
    end_line: int
    start: int
    end: int
    original: str
    replacement: str

    @property
    def id(self) -> str:
        """Stable across seeds and runs: the same edit of the same file always has the same id."""
        key = f"{self.file}\0{self.start}\0{self.end}\0{self.replacement}"
        return hashlib.sha256(key.encode()).hexdigest()[:10]

    def apply(self, source: str) -> str:
        if source[self.start : self.end] != self.original:
            raise ValueError(f"{self.file}: source changed since the mutation was found")
        return source[: self.start] + self.replacement + source[self.end :]


def parse(source: str | bytes, filename: str = "<unknown>") -> ast.Module:
    """ast.parse, one thread at a time: CPython 3.11's parser state is not thread-safe
    ("AST constructor recursion depth mismatch" when builder threads parse at once)."""
    with _PARSE_LOCK:
        return ast.parse(source, filename=filename)


def is_effective(source: str, mutated: str) -> bool:
    """The mutant parses and differs from the original in its AST (not only in formatting)."""
    try:
        new = parse(mutated)
    except SyntaxError:
        return False
    return ast.dump(new) != ast.dump(parse(source))


class _Finder:
    def __init__(self, source: str, file: str) -> None:
        self.source = source
        self.file = file
        self.lines = source.splitlines(keepends=True)
        self.line_starts = [0]
        for line in self.lines:
            self.line_starts.append(self.line_starts[-1] + len(line))

    def pos(self, lineno: int, col_bytes: int) -> int:
        """Absolute char offset of an AST position (AST columns count UTF-8 bytes)."""
        line = self.lines[lineno - 1]
        return self.line_starts[lineno - 1] + len(line.encode("utf-8")[:col_bytes].decode("utf-8", "replace"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (self.pos(node.lineno, node.col_offset),  # type: ignore[attr-defined]
                self.pos(node.end_lineno, node.end_col_offset))  # type: ignore[attr-defined]

    def text(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.source[start:end]

    def make(self, op: str, start: int, end: int, replacement: str) -> Mutation:
        line = self.source.count("\n", 0, start) + 1
        end_line = self.source.count("\n", 0, max(start, end - 1)) + 1
        return Mutation(op, self.file, line, end_line, start, end, self.source[start:end], replacement)

    def token_in_gap(self, op: str, left: ast.AST, right: ast.AST, pattern: str, repl: str) -> Mutation | None:
        """Swap the one operator token between two operands; gaps with comments or ambiguity are skipped."""
        gap_start, gap_end = self.span(left)[1], self.span(right)[0]
        gap = self.source[gap_start:gap_end]
        if "#" in gap:
            return None
        found = list(re.finditer(pattern, gap))
        if len(found) != 1:
            return None
        m = found[0]
        return self.make(op, gap_start + m.start(), gap_start + m.end(), repl)

    def shifted(self, node: ast.expr, delta: int) -> str | None:
        """The expression moved by one: constants change value, other expressions get `+ 1` / `- 1`."""
        value = _int_value(node)
        if value is not None:
            return str(value + delta)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
            offset = _int_value(node.right)
            if offset is not None:  # `n + 1` moves to `n` or `n + 2`, not to `n + 1 - 1`
                offset = (offset if isinstance(node.op, ast.Add) else -offset) + delta
                left = self.text(node.left)
                return left if offset == 0 else f"{left} {'+' if offset > 0 else '-'} {abs(offset)}"
        if isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)) or (
            isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv))
        ):
            return f"{self.text(node)} {'+' if delta > 0 else '-'} 1"
        return None

    def whole_lines(self, stmt: ast.stmt, siblings: list[ast.stmt]) -> tuple[int, int] | None:
        """The span of the full lines a statement occupies, if nothing else shares them."""
        if any(s is not stmt and s.end_lineno is not None and s.lineno <= stmt.end_lineno  # type: ignore[operator]
               and s.end_lineno >= stmt.lineno for s in siblings):
            return None
        start, end = self.span(stmt)
        line_start = self.line_starts[stmt.lineno - 1]
        line_end = self.line_starts[stmt.end_lineno]  # type: ignore[index]
        before = self.source[line_start:start]
        after = self.source[end:line_end]
        if before.strip() or (after.strip() and not after.strip().startswith("#")):
            return None
        return line_start, line_end


def _int_value(node: ast.expr) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and type(node.operand.value) is int:
        return -node.operand.value
    return None


def _is_str(node: ast.expr) -> bool:
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str | bytes))


def _skipped_block(node: ast.If) -> bool:
    """`if __name__ == "__main__"` and `if TYPE_CHECKING` never run under tests."""
    text = ast.unparse(node.test)
    return "__name__" in text or "TYPE_CHECKING" in text


def _calls_name(node: ast.Call) -> str:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _walk(tree: ast.AST) -> Iterator[ast.AST]:
    """ast.walk in a fixed order that skips blocks tests cannot reach."""
    stack = [tree]
    while stack:
        node = stack.pop(0)
        if isinstance(node, ast.If) and _skipped_block(node):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def find_mutations(source: str, file: str) -> list[Mutation]:
    """Every candidate mutation of one file, in a fixed order (no randomness here)."""
    try:
        tree = parse(source, file)
    except SyntaxError:
        return []
    f = _Finder(source, file)
    found: list[Mutation | None] = []
    docstrings = {id(n.body[0]) for n in _walk(tree)
                  if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Module)
                  and n.body and isinstance(n.body[0], ast.Expr) and _is_str(n.body[0].value)}
    for node in _walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for i, op in enumerate(node.ops):
                pattern, repl = _CMP[type(op)]
                found.append(f.token_in_gap("compare_op", operands[i], operands[i + 1], pattern, repl))
        elif isinstance(node, ast.BinOp) and type(node.op) in _BIN:
            if isinstance(node.op, ast.Add | ast.Mod) and (_is_str(node.left) or _is_str(node.right)):
                continue  # string concatenation / formatting: the mutant only raises TypeError
            pattern, repl = _BIN[type(node.op)]
            found.append(f.token_in_gap("arith_op", node.left, node.right, pattern, repl))
        elif isinstance(node, ast.AugAssign) and type(node.op) in _AUG and not _is_str(node.value):
            pattern, repl = _AUG[type(node.op)]
            found.append(f.token_in_gap("arith_op", node.target, node.value, pattern, repl))
        elif isinstance(node, ast.BoolOp):
            repl = "or" if isinstance(node.op, ast.And) else "and"
            pattern = r"\band\b" if isinstance(node.op, ast.And) else r"\bor\b"
            for left, right in zip(node.values, node.values[1:], strict=False):
                found.append(f.token_in_gap("bool_op", left, right, pattern, repl))
        if isinstance(node, ast.Call):
            found.extend(_call_mutations(f, node))
        elif isinstance(node, ast.Subscript):
            found.extend(_subscript_mutations(f, node))
        if isinstance(node, ast.If | ast.While | ast.IfExp):
            found.append(_negate(f, node))
        if isinstance(node, ast.Return) and node.value is not None:
            found.append(_wrong_return(f, node.value))
        for body in (getattr(node, name, None) for name in ("body", "orelse", "finalbody")):
            if isinstance(body, list) and len(body) >= 2 and not isinstance(node, ast.Module | ast.ClassDef):
                for stmt in body:
                    if isinstance(stmt, _DROPPABLE) and id(stmt) not in docstrings:
                        lines = f.whole_lines(stmt, body)
                        if lines:
                            found.append(f.make("drop_stmt", lines[0], lines[1], ""))
    unique: dict[str, Mutation] = {}
    for m in found:
        if m is not None and m.original != m.replacement:
            unique.setdefault(m.id, m)
    return list(unique.values())


def _call_mutations(f: _Finder, node: ast.Call) -> list[Mutation | None]:
    out: list[Mutation | None] = []
    name = _calls_name(node)
    args = node.args
    if name == "range" and args and not any(isinstance(a, ast.Starred) for a in args):
        stop = args[0] if len(args) == 1 else args[1]
        shifted = f.shifted(stop, -1 if (_int_value(stop) or 1) > 0 else 1)
        if shifted is not None:
            out.append(f.make("off_by_one", *f.span(stop), shifted))
        if len(args) >= 2:
            shifted = f.shifted(args[0], 1)
            if shifted is not None:
                out.append(f.make("off_by_one", *f.span(args[0]), shifted))
    if len(args) >= 2 and name not in _SYMMETRIC_CALLS and not any(isinstance(a, ast.Starred) for a in args[:2]):
        first, second = f.text(args[0]), f.text(args[1])
        if first != second and "\n" not in first + second:
            start, end = f.span(args[0])[0], f.span(args[1])[1]
            gap = f.source[f.span(args[0])[1] : f.span(args[1])[0]]
            out.append(f.make("swap_args", start, end, second + gap + first))
    return out


def _subscript_mutations(f: _Finder, node: ast.Subscript) -> list[Mutation | None]:
    index = node.slice
    out: list[Mutation | None] = []
    if isinstance(index, ast.Slice):
        for bound, delta in ((index.lower, 1), (index.upper, -1)):
            if bound is not None:
                shifted = f.shifted(bound, delta)
                if shifted is not None:
                    out.append(f.make("off_by_one", *f.span(bound), shifted))
    else:
        value = _int_value(index)
        if value is not None:
            out.append(f.make("off_by_one", *f.span(index), str(value + (1 if value >= 0 else -1))))
    return out


def _negate(f: _Finder, node: ast.If | ast.While | ast.IfExp) -> Mutation | None:
    test = node.test
    if isinstance(test, ast.Constant):
        return None  # `while True:` and friends: negating makes dead or endless code, not a bug
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = f.text(test.operand)
        return f.make("negate_cond", *f.span(test), inner if isinstance(test.operand, _SIMPLE) else f"({inner})")
    text = f.text(test)
    wrapped = f"not {text}" if isinstance(test, (*_SIMPLE, ast.Compare)) and "\n" not in text else f"not ({text})"
    return f.make("negate_cond", *f.span(test), wrapped)


def _wrong_return(f: _Finder, value: ast.expr) -> Mutation | None:
    if isinstance(value, ast.Constant):
        if isinstance(value.value, bool):
            return f.make("wrong_return", *f.span(value), str(not value.value))
        if type(value.value) is int:
            return f.make("wrong_return", *f.span(value), str(value.value + 1))
        return None
    if isinstance(value, ast.Compare | ast.BoolOp):
        return f.make("wrong_return", *f.span(value), f"not ({f.text(value)})")
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not):
        return f.make("wrong_return", *f.span(value), f"({f.text(value.operand)})")
    if isinstance(value, ast.Name | ast.Attribute | ast.Subscript):
        return f.make("wrong_return", *f.span(value), "None")
    return None


def order_mutations(mutations: list[Mutation], seed: int) -> list[Mutation]:
    """A seeded order that spreads a capped build over files and operators (round-robin, shuffled within)."""
    rng = random.Random(seed)
    by_file: dict[str, dict[str, list[Mutation]]] = {}
    for m in sorted(mutations, key=lambda m: (m.file, m.start, m.id)):
        by_file.setdefault(m.file, {}).setdefault(m.operator, []).append(m)
    per_file: list[list[Mutation]] = []
    for file in sorted(by_file):
        groups = [by_file[file][op] for op in sorted(by_file[file])]
        for group in groups:
            rng.shuffle(group)
        rng.shuffle(groups)
        per_file.append(_round_robin(groups))
    rng.shuffle(per_file)
    return _round_robin(per_file)


def _round_robin(lists: list[list[Mutation]]) -> list[Mutation]:
    out: list[Mutation] = []
    depth = max((len(x) for x in lists), default=0)
    for i in range(depth):
        out.extend(x[i] for x in lists if i < len(x))
    return out
