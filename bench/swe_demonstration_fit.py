"""How many of the default set's easy train demonstrations fit a harness's turns, by the edit's form.

A warm start (`swe-warm-start`) learns from the train split's fixes acted out as episodes: find the
function (`grep`), read it (`cat -n | sed -n`), the edit, `submit`. A demonstration is left out where it
needs more turns than the harness's `max_turns` or a reply does not fit `turn_tokens` (counted with the
policy's tokenizer, one token kept for the end of the turn, as harness/warm_start.py does). The edit's form
decides both: a one-line fix rewritten in a `python3` here-document (the old form) or a `sed`
substitution on the numbered line (meta_agent/swe/sed_edit.py, used where safe).

Prints, for each budget (turns x tokens per turn), how many demonstrations fit in each form. No command is
run and nothing is trained: the replies' lengths are counted from the commands a demonstration sends
(the listing's line range counted at the bug's line, a few digits either way).

    python bench/swe_demonstration_fit.py [--policy smollm2] [--out bench/results/swe-demonstration-fit]
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from meta_agent.fsutil import atomic_write_text  # noqa: E402
from meta_agent.policy import resolve_policy  # noqa: E402
from meta_agent.swe.defaults import DEFAULT_TASKSET  # noqa: E402
from meta_agent.swe.demonstration import demonstration, edit_commands  # noqa: E402
from meta_agent.swe.taskset import load_tasks  # noqa: E402

sys.path.insert(0, str(ROOT / "harness_repo"))
from harness.swe.demonstrations import VIEW_LINES  # noqa: E402  (the lines of the function a demonstration reads)

BUDGETS = [(3, 48), (4, 48), (4, 64), (4, 72), (4, 96), (5, 128)]


def replies(demo: dict, edits: list[str]) -> list[str]:
    """What a demonstration sends with these edits, one reply per turn."""
    start = max(1, demo["line"] - VIEW_LINES // 2)
    view = f"cat -n {shlex.quote(demo['file'])} | sed -n '{start},{start + VIEW_LINES - 1}p'"
    return [f"```bash\n{c}\n```" for c in [demo["find"], view, *edits, "submit"]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--policy", default="smollm2")
    ap.add_argument("--taskset", default=DEFAULT_TASKSET)
    ap.add_argument("--out", type=Path, help="also write the table and the numbers here")
    args = ap.parse_args()
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(resolve_policy(args.policy)))
    easy = [i for i in load_tasks("train", args.taskset) if i.tier == "easy"]
    forms: dict[str, list[tuple[int, int]]] = {"here-document": [], "sed where safe": []}
    sed_used = 0
    for inst in easy:
        demo = demonstration(inst)
        if demo is None or not demo["find"]:
            continue
        sed_used += any(e.startswith("sed -i ") for e in demo["edits"])
        for form, heredoc in (("here-document", True), ("sed where safe", False)):
            sent = replies(demo, edit_commands(inst, sed=not heredoc))
            longest = max(len(tok(r, add_special_tokens=False)["input_ids"]) for r in sent)
            forms[form].append((len(sent), longest))
    n = len(forms["sed where safe"])
    lines = [f"{len(easy)} easy train instances of `{args.taskset}`, {n} with a demonstration; {sed_used} of "
             f"them edit with `sed`.", "",
             "| turns x tokens | " + " | ".join(forms) + " |", "|---|" + "---|" * len(forms)]
    table: dict[str, dict[str, int]] = {}
    for turns, tokens in BUDGETS:
        fit = {form: sum(t <= turns and longest < tokens for t, longest in rows) for form, rows in forms.items()}
        table[f"{turns}x{tokens}"] = fit
        lines.append(f"| {turns} x {tokens} | " + " | ".join(f"{v} of {n}" for v in fit.values()) + " |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(args.out / "table.md", text + "\n")
        atomic_write_text(args.out / "table.json", json.dumps({"taskset": args.taskset, "easy": len(easy),
                                                               "demonstrations": n, "sed": sed_used,
                                                               "fit": table}, indent=1) + "\n")


if __name__ == "__main__":
    main()
