"""What a run decided, without what varies between two runs of it (dates, paths, seconds).

Used to show that refactoring the loop changes no decision: the same tiny run, recorded before,
must give the same candidates, stages, verdicts, candidate trees and final main tree after.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import git


def _events(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines() if line.strip()]


def _main_after(events: list[dict[str, Any]], gen: int) -> str:
    return next(e["data"]["main_after"] for e in events if e["type"] == "generation_done" and e["data"]["gen"] == gen)


def signature(run: Path, generations: int | None = None) -> dict[str, Any]:
    """The run's decisions; with `generations`, only those of its first `generations` generations, and main
    as it stood after them (a longer run decides its first generations as a shorter one does)."""
    repo = git.Repo(run / "harness")
    events = _events(run)
    main = "main" if generations is None else _main_after(events, generations - 1)
    local = {}  # run-specific candidate ids -> "g-k", of the generations compared
    candidates = []
    for e in events:
        d = e["data"]
        if e["type"] != "candidate_created" or (generations is not None and d["gen"] >= generations):
            continue
        local[d["cand_id"]] = f"{d['gen']}-{d['k']}"
        tree = repo.commit(d["commit"]).tree.hexsha if d.get("commit") else None
        candidates.append({"cand": local[d["cand_id"]], "title": d["title"], "kind": d["kind"],
                           "skills": d["skills"], "ok": d["ok"], "tree": tree})
    def mine(e: dict[str, Any]) -> bool:
        return e["data"].get("cand_id") in local

    # Grouped by candidate, each candidate's in journal order: how candidates interleave is the executor's
    # business (parallel backtests finish in any order), what each one went through is the run's decision.
    stages = sorted(({"cand": local[e["data"]["cand_id"]], "stage": e["data"]["stage"], "passed": e["data"]["passed"]}
                     for e in events if e["type"] == "stage_done" and mine(e)), key=lambda s: s["cand"])
    verdicts = sorted(({"cand": local[e["data"]["cand_id"]], "verdict": e["data"]["verdict"],
                        "stage": e["data"]["stage"]} for e in events if e["type"] == "verdict" and mine(e)),
                      key=lambda v: v["cand"])
    merges = [local[e["data"]["cand_id"]] for e in events if e["type"] == "merged" and mine(e)]
    return {"candidates": candidates, "stages": stages, "verdicts": verdicts, "merges": merges,
            "final_main_tree": repo.commit(main).tree.hexsha,
            "mainline": len(list(repo.iter_commits(main, first_parent=True)))}


if __name__ == "__main__":
    import sys

    print(json.dumps(signature(Path(sys.argv[1])), indent=1, sort_keys=True))
