"""mini-swe-agent, driven *inside* the sandbox: `python -c <this source> SPEC_JSON` (via sandbox_launch).

Imports only the standard library, PyYAML and minisweagent (all in the venv the sandbox mounts). The
agent's bash commands run here, in the candidate's workspace; its litellm client talks to the relay.
Prints one JSON line: {"exit_status": ..., "submission": ..., "calls": N}.
"""

from __future__ import annotations

import json
import os
import sys

import yaml
from minisweagent.agents.default import DefaultAgent
from minisweagent.config import builtin_config_dir
from minisweagent.environments.local import LocalEnvironment
from minisweagent.models.litellm_model import LitellmModel


def main() -> None:
    spec = json.loads(sys.argv[1])
    config = yaml.safe_load((builtin_config_dir / "mini.yaml").read_text())
    model_config = {k: v for k, v in config.get("model", {}).items() if k in ("observation_template",
                                                                               "format_error_template")}
    model = LitellmModel(model_name=spec["model"], cost_tracking="ignore_errors",
                         model_kwargs={"api_base": spec["api_base"], "api_key": "held-by-meta-agent",
                                       "drop_params": True, "timeout": spec.get("call_timeout_s", 600),
                                       "num_retries": 0, "_skip_mcp_handler": True},
                         **model_config)
    env = LocalEnvironment(cwd=os.getcwd(), timeout=int(spec.get("command_timeout_s", 300)),
                           env=config.get("environment", {}).get("env", {}))
    agent_config = {k: v for k, v in config.get("agent", {}).items() if k in ("system_template", "instance_template")}
    agent = DefaultAgent(model, env, **agent_config, step_limit=int(spec["steps"]), cost_limit=0,
                         output_path=spec.get("trajectory"))
    result = agent.run(spec["task"])
    print(json.dumps({"exit_status": result.get("exit_status"), "submission": str(result.get("submission", ""))[:4000],
                      "calls": agent.n_calls}))


if __name__ == "__main__":
    main()
