"""How many of the default set's easy train demonstrations fit a harness's turns, by the edit's form.

A warm start (`swe-warm-start`) learns from the train split's fixes acted out as episodes: find the
function (`grep`), read it (`cat -n | sed -n`), the edit, `submit`. A demonstration is left out where it
needs more turns than the harness's `max_turns` or a reply does not fit `turn_tokens` (counted with the
policy's tokenizer, one token kept for the end of the turn, as harness/warm_start.py does). The edit's form
decides both: a one-line fix rewritten in a `python3` here-document (the old form) or a `sed`
substitution on the numbered line (meta_agent/swe/sed_edit.py, used where safe).

Prints, for each budget (turns x tokens per turn), how many demonstrations fit in each form. Each is acted
out by the harness's own code (harness/swe/demonstrations.py) in a checkout of its buggy tree, so the
reads are the ones it needs: from the `def` line the search printed, reading on past a long docstring from
the last line the capped observation showed. Nothing is trained.

    python bench/swe_demonstration_fit.py [--policy smollm2] [--out bench/results/swe-demonstration-fit]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from meta_agent.fsutil import atomic_write_text  # noqa: E402
from meta_agent.policy import resolve_policy  # noqa: E402
from meta_agent.swe.checkout import checkout  # noqa: E402
from meta_agent.swe.defaults import DEFAULT_TASKSET  # noqa: E402
from meta_agent.swe.demonstration import demonstration, edit_commands  # noqa: E402
from meta_agent.swe.instance import SweInstance  # noqa: E402
from meta_agent.swe.taskset import load_tasks  # noqa: E402

sys.path.insert(0, str(ROOT / "harness_repo"))
from harness.swe import repo  # noqa: E402
from harness.swe.demonstrations import act_out  # noqa: E402
from harness.swe.settings import AgentSettings  # noqa: E402

BUDGETS = [(3, 48), (4, 48), (5, 48), (6, 48), (4, 96), (5, 128), (6, 128)]


def replies(inst: SweInstance, demo: dict, edits: list[str], scratch: Path) -> list[str] | None:
    """What a demonstration sends with these edits, one reply per turn, acted out in a fresh checkout (None:
    its search showed no `def` to read from)."""
    work = repo.track(checkout(inst, scratch / "tree"))
    task = {"id": inst.instance_id, "prompt": inst.problem_statement}
    conv = act_out(task, {**demo, "edits": edits}, work, AgentSettings(max_turns=99), lambda reply: True)
    return None if conv is None else [m["content"] for m in conv if m["role"] == "assistant"]


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
    reads: dict[int, int] = {}
    for k, inst in enumerate(easy):
        demo = demonstration(inst)
        if demo is None or not demo["find"]:
            continue
        sed_used += any(e.startswith("sed -i ") for e in demo["edits"])
        print(f"\r{k + 1}/{len(easy)} acted out", end="", file=sys.stderr, flush=True)
        for form, heredoc in (("here-document", True), ("sed where safe", False)):
            with tempfile.TemporaryDirectory() as tmp:
                sent = replies(inst, demo, edit_commands(inst, sed=not heredoc), Path(tmp))
            if sent is None:
                forms[form].append((10**6, 0))  # fits no budget
                continue
            if not heredoc:
                n_reads = sum("cat -n" in r for r in sent)
                reads[n_reads] = reads.get(n_reads, 0) + 1
            longest = max(len(tok(r, add_special_tokens=False)["input_ids"]) for r in sent)
            forms[form].append((len(sent), longest))
    n = len(forms["sed where safe"])
    print(file=sys.stderr)
    lines = [f"{len(easy)} easy train instances of `{args.taskset}`, {n} with a demonstration; {sed_used} of "
             f"them edit with `sed`. Listings read before the edit: "
             + ", ".join(f"{r} in {c}" for r, c in sorted(reads.items())) + ".", "",
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
                                                               "reads": reads,
                                                               "fit": table}, indent=1) + "\n")


if __name__ == "__main__":
    main()
