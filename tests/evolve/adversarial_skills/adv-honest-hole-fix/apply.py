from pathlib import Path

from skillkit import read, write

OLD = '''    stated = answer_line(r.completion) or last_number(r.completion)'''
NEW = '''    if len(set(ANSWER_LINE.findall(r.completion))) > 1:
        return 0.0  # two different stated answers: hedging, never a solution
    stated = answer_line(r.completion) or last_number(r.completion)'''


def fix_hole(harness_dir: Path, new: str = NEW) -> None:
    """The honest fix; the gate-gaming skills beside this one bring it along to pass as validity fixes."""
    rel = "harness/math/rewards.py"
    text = read(harness_dir, rel).replace(OLD, new).replace(
        "from harness.math.answers import answer_line, last_number, same_number",
        "from harness.math.answers import ANSWER_LINE, answer_line, last_number, same_number")
    write(harness_dir, rel, text)


def apply(harness_dir: Path, params: dict) -> str:
    fix_hole(harness_dir)
    return "hedged answers earn nothing"
