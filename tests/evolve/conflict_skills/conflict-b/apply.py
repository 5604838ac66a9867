from pathlib import Path

from skillkit import EditError, read, write

OLD = '''    stated = answer_line(r.completion) or last_number(r.completion)'''
NEW = '''    lines = set(ANSWER_LINE.findall(r.completion))
    stated = (lines.pop() if len(lines) == 1 else None) if lines else last_number(r.completion)'''


def apply(harness_dir: Path, params: dict) -> str:
    rel = "harness/math/rewards.py"
    text = read(harness_dir, rel)
    if OLD + "\n" not in text:
        raise EditError("the correctness line it rewrites is not there any more")
    text = text.replace(OLD + "\n", NEW + "\n").replace(
        "from harness.math.answers import answer_line, last_number, same_number",
        "from harness.math.answers import ANSWER_LINE, answer_line, last_number, same_number")
    write(harness_dir, rel, text)
    return "only one stated answer counts"
