"""A small OpenAI-compatible server for one model directory, generating greedily with transformers, one
request at a time: what `python -m vllm.entrypoints.openai.api_server` answers, for a machine without a
GPU. The tests start it through `evaluator.server_command` to run the sealed evaluator's whole serving
path (merged checkpoint written, server launched, health polled, concurrent completions, shut down).

`--fail-after-start` exits at once (a server that crashes); `--never-ready` never answers /health."""

from __future__ import annotations

import argparse
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--served-model-name", default="policy")
    parser.add_argument("--fail-after-start", action="store_true")
    parser.add_argument("--never-ready", action="store_true")
    args, _vllm_only = parser.parse_known_args()  # --seed, --gpu-memory-utilization: vLLM's, ignored here
    if args.fail_after_start:
        print("model_server: failing on purpose", flush=True)
        sys.exit(3)
    if args.never_ready:
        time.sleep(3600)

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32).eval()

    class Handler(BaseHTTPRequestHandler):
        def _send(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._send(200 if self.path == "/health" else 404, {})

        def do_POST(self) -> None:
            req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path != "/v1/chat/completions" or req.get("model") != args.served_model_name:
                self._send(404, {"error": f"no {self.path} for {req.get('model')}"})
                return
            text = tok.apply_chat_template(req["messages"], tokenize=False, add_generation_prompt=True)
            enc = tok([text], return_tensors="pt", add_special_tokens=False)
            with torch.inference_mode():
                out = model.generate(**enc, max_new_tokens=int(req["max_tokens"]), do_sample=False,
                                     pad_token_id=tok.pad_token_id or tok.eos_token_id)
            content = tok.decode(out[0, enc["input_ids"].shape[1]:], skip_special_tokens=True)
            self._send(200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]})

        def log_message(self, *_: Any) -> None:
            pass

    class Server(HTTPServer):
        request_queue_size = 256  # the evaluator keeps `concurrency` requests in flight

    Server((args.host, args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
