"""Runs an external coding agent *inside* the sandbox: `python -c <this source> SPEC_JSON`.

Standard library only (the sandbox sees the interpreter, not meta-agent). It listens on
127.0.0.1 in the sandbox's own network namespace and pipes every connection to the relay's Unix
socket, so the agent reaches the model endpoint and nothing else. Then it writes the agent's config
files, starts the agent with `{port}` in its argv, env and files replaced by the port, waits, and
prints one JSON line: {"exit_code": N, "stdout": ..., "stderr": ...} (both bounded).

SPEC: {"socket": PATH, "argv": [...], "env": {...}, "files": {PATH: TEXT}, "timeout_s": N, "output_chars": N}
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (dst, src):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


def _serve(listener: socket.socket, relay: str) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(relay)
        except OSError:
            client.close()
            continue
        threading.Thread(target=_pipe, args=(client, upstream), daemon=True).start()
        threading.Thread(target=_pipe, args=(upstream, client), daemon=True).start()


def _tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"[{len(text) - limit} characters cut]\n" + text[-limit:]


def main() -> None:
    spec = json.loads(sys.argv[1])
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    port = str(listener.getsockname()[1])
    threading.Thread(target=_serve, args=(listener, spec["socket"]), daemon=True).start()

    def fill(text: str) -> str:
        return text.replace("{port}", port)

    for path, text in spec.get("files", {}).items():
        p = Path(fill(path))
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(fill(text), encoding="utf-8")
    env = {**os.environ, **{k: fill(v) for k, v in spec.get("env", {}).items()}}
    limit = int(spec.get("output_chars", 20_000))
    try:
        done = subprocess.run([fill(a) for a in spec["argv"]], env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=float(spec.get("timeout_s", 1800)))
        code, out, err = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as e:
        code, out, err = 124, e.stdout or b"", (e.stderr or b"") + b"\n[the agent ran out of time and was stopped]"
    except OSError as e:
        code, out, err = 127, b"", f"could not start {spec['argv'][0]}: {e}".encode()
    print(json.dumps({"exit_code": code, "stdout": _tail(out.decode("utf-8", "replace"), limit),
                      "stderr": _tail(err.decode("utf-8", "replace"), limit)}))


if __name__ == "__main__":
    main()
