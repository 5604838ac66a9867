"""The sealed evaluator's optional generation backend: an OpenAI-compatible vLLM server per evaluation.

`transformers` (default) generates in the evaluating process (`inference.greedy_chat`). `vllm` writes
the checkpoint, LoRA merged, to a private directory, starts `python -m vllm.entrypoints.openai.api_server`
on it (loopback only, a free port), sends every conversation as a greedy chat completion, and stops the
server when the evaluation ends. The checkpoint is loaded and checked exactly as for `transformers`
(`policy.load_for_inference`: plain files, the run's base model, the root's tokenizer and chat template),
so the server only ever serves what the sealed evaluator would have run. Trusted code: no harness
setting reaches it.

`server_command` replaces the launch (a wrapper script, a vLLM build elsewhere): it is run with
`--model DIR --served-model-name policy --host 127.0.0.1 --port PORT --seed 0 --gpu-memory-utilization U`
appended and must answer `GET /health` and `POST /v1/chat/completions`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from meta_agent.errors import UserError

SERVED_NAME = "policy"
VLLM_SERVER = ["-m", "vllm.entrypoints.openai.api_server"]


class EvaluatorSettings(BaseModel):
    """How the sealed evaluator generates (a domain's `evaluator:` section)."""

    generation: Literal["transformers", "vllm"] = Field("transformers", description=(
        "transformers: in the evaluating process; vllm: an OpenAI-compatible vLLM server per evaluation "
        "(needs a CUDA GPU and `make setup-gpu`)"))
    server_command: list[str] | None = Field(None, description=(
        "vllm: the command that starts the server (default: this Python with -m "
        "vllm.entrypoints.openai.api_server); --model, --port and the rest are appended"))
    gpu_memory_utilization: float = Field(0.85, gt=0, le=1, description="vllm: the server's share of the GPU")
    startup_timeout_s: float = Field(900, gt=0, description="vllm: time the server may take to answer /health")
    request_timeout_s: float = Field(600, gt=0, description="vllm: time one completion may take")
    concurrency: int = Field(32, ge=1, le=1024, description="vllm: completions in flight (the server batches them)")


class ServingError(UserError):
    """The evaluation server cannot be used: not installable here, did not start, or answered wrongly."""


def serving_problem(settings: EvaluatorSettings, cuda: bool | None = None, vllm: bool | None = None) -> str | None:
    """Why this machine cannot evaluate with `settings` (None: it can). A custom `server_command` is the
    user's to vouch for; the default launch needs vLLM and a CUDA GPU."""
    if settings.generation != "vllm" or settings.server_command is not None:
        return None
    if cuda is None:
        from sandboxes.gpu import has_gpu

        cuda = has_gpu()
    if vllm is None:
        vllm = importlib.util.find_spec("vllm") is not None
    missing = [what for what, ok in (("a CUDA GPU", cuda), ("vLLM (make setup-gpu)", vllm)) if not ok]
    if not missing:
        return None
    return (f"evaluator.generation is vllm, which needs {' and '.join(missing)} on the machine that evaluates; "
            f"set evaluator.generation: transformers here (or evaluator.server_command to a server you run)")


def evaluator_of(settings: Any) -> EvaluatorSettings | None:
    """A domain's `evaluator:` section; None (in-process) for a plugin's settings that have none."""
    return getattr(settings, "evaluator", None)


def check_serving(settings: EvaluatorSettings | None) -> None:
    """Raise `ServingError` when this machine cannot evaluate with `settings` (None: the default, in-process)."""
    problem = serving_problem(settings) if settings is not None else None
    if problem:
        raise ServingError(problem)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """One server process serving one merged checkpoint; a context manager (stopped on exit, whatever happens)."""

    def __init__(self, settings: EvaluatorSettings, model_dir: Path, log: Path) -> None:
        self.settings, self.model_dir, self.log = settings, model_dir, log
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        base = self.settings.server_command or [sys.executable, *VLLM_SERVER]
        return [*base, "--model", str(self.model_dir), "--served-model-name", SERVED_NAME, "--host", "127.0.0.1",
                "--port", str(self.port), "--seed", "0",
                "--gpu-memory-utilization", str(self.settings.gpu_memory_utilization)]

    def __enter__(self) -> Server:
        import httpx

        with self.log.open("wb") as out:
            try:
                self.proc = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT,
                                             start_new_session=True)
            except OSError as e:
                raise ServingError(f"cannot start the evaluation server {self.command()[0]!r}: {e}") from e
        deadline = time.monotonic() + self.settings.startup_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServingError(f"the evaluation server exited with code {self.proc.returncode} before it "
                                   f"answered; its log ends:\n{self._tail()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/health", timeout=2.0).status_code == 200:
                    return self
            time.sleep(0.5)
        self.stop()
        raise ServingError(f"the evaluation server did not answer /health within {self.settings.startup_timeout_s:.0f}"
                           f" s (evaluator.startup_timeout_s); its log ends:\n{self._tail()}")

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def _tail(self, chars: int = 3000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"

    def complete(self, conversation: list[dict[str, str]], max_new_tokens: int) -> str:
        """One greedy chat completion (the server applies the checkpoint's chat template)."""
        import httpx

        body = {"model": SERVED_NAME, "messages": conversation, "max_tokens": max_new_tokens, "temperature": 0.0,
                "seed": 0}
        try:
            res = httpx.post(f"{self.url}/v1/chat/completions", json=body, timeout=self.settings.request_timeout_s)
            res.raise_for_status()
            content = res.json()["choices"][0]["message"]["content"]
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as e:
            raise ServingError(f"the evaluation server did not complete a request ({type(e).__name__}: "
                               f"{str(e)[:300]}); its log ends:\n{self._tail()}") from e
        return str(content or "")


@contextlib.contextmanager
def served(model: Any, tokenizer: Any, settings: EvaluatorSettings) -> Iterator[Server]:
    """The loaded (checked, merged) model behind a server; its files and the server go when the block ends."""
    work = Path(tempfile.mkdtemp(prefix="meta-agent-serve-"))
    try:
        model_dir = work / "model"
        model.save_pretrained(str(model_dir), safe_serialization=True)
        tokenizer.save_pretrained(str(model_dir))
        _free_gpu(model)  # the server needs the GPU memory the checkpoint took in this process
        with Server(settings, model_dir, work / "server.log") as server:
            yield server
    finally:
        shutil.rmtree(work, ignore_errors=True)


def served_greedy_chat(model: Any, tokenizer: Any, conversations: Sequence[list[dict[str, str]]], *,
                       max_new_tokens: int, settings: EvaluatorSettings,
                       on_batch: Callable[[int], None] | None = None) -> list[str]:
    """`inference.greedy_chat` through a server: the completions, in order."""
    check_serving(settings)
    with served(model, tokenizer, settings) as server, ThreadPoolExecutor(settings.concurrency) as pool:
        out: list[str] = []
        for text in pool.map(lambda c: server.complete(c, max_new_tokens), conversations):
            out.append(text)
            if on_batch:
                on_batch(1)
        return out


def _free_gpu(model: Any) -> None:
    import torch

    if torch.cuda.is_available():
        model.to("cpu")
        torch.cuda.empty_cache()
