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


def signature(run: Path) -> dict[str, Any]:
    repo = git.Repo(run / "harness")
    events = _events(run)
    local = {}  # run-specific candidate ids -> "g-k"
    candidates = []
    for e in events:
        if e["type"] != "candidate_created":
            continue
        d = e["data"]
        local[d["cand_id"]] = f"{d['gen']}-{d['k']}"
        tree = repo.commit(d["commit"]).tree.hexsha if d.get("commit") else None
        candidates.append({"cand": local[d["cand_id"]], "title": d["title"], "kind": d["kind"],
                           "skills": d["skills"], "ok": d["ok"], "tree": tree})
    # Grouped by candidate, each candidate's in journal order: how candidates interleave is the executor's
    # business (parallel backtests finish in any order), what each one went through is the run's decision.
    stages = sorted(({"cand": local[e["data"]["cand_id"]], "stage": e["data"]["stage"], "passed": e["data"]["passed"]}
                     for e in events if e["type"] == "stage_done"), key=lambda s: s["cand"])
    verdicts = sorted(({"cand": local[e["data"]["cand_id"]], "verdict": e["data"]["verdict"],
                        "stage": e["data"]["stage"]} for e in events if e["type"] == "verdict"),
                      key=lambda v: v["cand"])
    merges = [local[e["data"]["cand_id"]] for e in events if e["type"] == "merged"]
    return {"candidates": candidates, "stages": stages, "verdicts": verdicts, "merges": merges,
            "final_main_tree": repo.commit("main").tree.hexsha,
            "mainline": len(list(repo.iter_commits("main", first_parent=True)))}


if __name__ == "__main__":
    import sys

    print(json.dumps(signature(Path(sys.argv[1])), indent=1, sort_keys=True))
