"""Read Harbor task directories with Harbor's own code; run by Harbor's interpreter, never imported by meta-agent.

Harbor needs Python >= 3.12 and meta-agent runs on 3.11 (the CPU torch wheel), so `meta_agent/swe/harbor.py`
runs this file with the interpreter of Harbor's tool venv (`make setup` makes `.venv-harbor` where a Python
3.12 exists). argv: task directories; stdout: one JSON list, an entry per directory, `ok` false with the
reason where Harbor refuses one.
"""

import json
import sys


def read(task_dir: str) -> dict[str, object]:
    from harbor.models.task.task import Task

    try:
        task = Task(task_dir)
    except Exception as e:  # Harbor's validation errors are many kinds; each is this task's refusal
        return {"dir": task_dir, "ok": False, "error": f"{type(e).__name__}: {e}"[:2000]}
    config, paths = task.config, task.paths
    test = paths.discovered_test_path
    return {
        "dir": task_dir, "ok": True, "name": task.name, "instruction": task.instruction,
        "steps": bool(config.steps), "docker_image": config.environment.docker_image,
        "workdir": config.environment.workdir, "memory_mb": config.environment.memory_mb,
        "cpus": config.environment.cpus, "verifier_timeout_s": config.verifier.timeout_sec,
        "agent_timeout_s": config.agent.timeout_sec,
        "dockerfile": (paths.environment_dir / "Dockerfile").is_file(),
        "test_script": str(test.relative_to(paths.task_dir)) if test is not None else None,
    }


if __name__ == "__main__":
    print(json.dumps([read(d) for d in sys.argv[1:]]))
