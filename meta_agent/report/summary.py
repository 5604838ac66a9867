"""The end-of-run summary: per generation the policy's selection score and what happened to each
candidate (promoted and why, rejected and at which stage), then evolved vs static on the test split."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from meta_agent.fsutil import atomic_write_text
from meta_agent.lineage import EventLog


def collect(log: EventLog, final: dict[str, Any] | None) -> dict[str, Any]:
    created = {e["data"]["cand_id"]: e["data"] for e in log.of_type("candidate_created")}
    candidates = []
    for e in log.of_type("verdict"):
        v = e["data"]
        c = created.get(v["cand_id"], {})
        candidates.append({"cand_id": v["cand_id"], "title": v.get("title", c.get("title", "")), "kind": v["kind"],
                           "skills": v.get("skills", []), "verdict": v["verdict"], "stage": v["stage"],
                           "reason": v["reason"], "delta": v.get("delta"), "ci": v.get("ci"),
                           "branch": c.get("branch", ""), "commit": c.get("commit")})
    gens = [e["data"] for e in log.of_type("generation_done")]
    return {"generations": gens, "candidates": candidates, "final": final or {}}


def _fmt_score(s: dict[str, Any] | None) -> str:
    return "n/a" if not s else f"{s['mean']:.3f} [{s['low']:.3f}, {s['high']:.3f}] (n={s['n']})"


def render_markdown(summary: dict[str, Any]) -> str:
    lines = ["# meta-agent evolve summary", "", "## Generations", "",
             "| gen | selection score of main's policy | dominant failure modes | main after |", "|---|---|---|---|"]
    for g in summary["generations"]:
        score = f"{g['control_score']:.3f} [{g['control_low']:.3f}, {g['control_high']:.3f}]"
        lines.append(f"| {g['gen']} | {score} | {', '.join(g['dominant']) or '-'} | `{g['main_after'][:12]}` |")
    lines += ["", "## Candidates", "", "| candidate | kind | verdict | stage | reason |", "|---|---|---|---|---|"]
    for c in summary["candidates"]:
        reason = c["reason"].replace("|", "/").replace("\n", " ")[:240]
        lines.append(f"| `{c['cand_id']}` {c['title']} | {c['kind']} | **{c['verdict']}** | {c['stage']} | {reason} |")
    final = summary["final"]
    lines += ["", "## Final comparison on the sealed test split", ""]
    if final:
        lines.append(f"- evolved harness: {_fmt_score(final.get('evolved'))}")
        if "static" in final:
            lines.append(f"- static harness (same compute): {_fmt_score(final.get('static'))}")
            p = final["paired"]
            lines.append(f"- paired difference (evolved - static): {p['mean']:+.3f} "
                         f"[{p['low']:+.3f}, {p['high']:+.3f}]")
    else:
        lines.append("not reached (the run stopped early; `meta-agent resume` continues it)")
    return "\n".join(lines) + "\n"


def write_summary(run_dir: Path, log: EventLog, final: dict[str, Any] | None) -> dict[str, Any]:
    summary = collect(log, final)
    atomic_write_text(run_dir / "summary.json", json.dumps(summary, indent=2, default=str))
    atomic_write_text(run_dir / "summary.md", render_markdown(summary))
    return summary
