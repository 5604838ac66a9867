"""`meta-agent watch RUN`: the run's lineage page, served on localhost and rendered afresh on every load."""

from __future__ import annotations

import functools
import html
import http.server
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from meta_agent.eventlog import require_run
from meta_agent.report.lineage_page import render_lineage_html
from meta_agent.report.lineage_view import collect_lineage

console = Console(highlight=False, soft_wrap=True)


class PageHandler(http.server.SimpleHTTPRequestHandler):
    """`/` is the page, rendered from the journal and live.json now; anything else is a file of the run
    (the reports the page links to). Only GET and HEAD; bound to localhost by `watch`."""

    def __init__(self, *args: Any, run_dir: Path, **kwargs: Any) -> None:
        self.run_dir = run_dir
        super().__init__(*args, directory=str(run_dir), **kwargs)

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] not in ("/", "/lineage.html"):
            return super().do_GET()
        try:
            body = render_lineage_html(collect_lineage(self.run_dir, self.run_dir)).encode()
        except Exception as e:  # a journal mid-write, a run dir gone: say so in the page, keep serving
            body = ("<!doctype html><meta http-equiv='refresh' content='5'>"
                    f"<p>cannot read the run now: {html.escape(str(e))}</p>").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the terminal shows the address once, not every reload."""


def watch(
    run_dir: Annotated[Path, typer.Argument(help="an evolve run directory (running or not)")],
    port: Annotated[int, typer.Option(help="local port (0: any free one)")] = 8765,
) -> None:
    """Serve a run's lineage page on http://127.0.0.1:PORT while it runs: the generation in progress, the
    candidate and stage running now, every verdict so far. The page reloads itself; Ctrl-C stops serving."""
    run_dir = run_dir.resolve()
    require_run(run_dir)
    handler = functools.partial(PageHandler, run_dir=run_dir)
    try:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    except OSError as e:
        raise typer.BadParameter(f"cannot listen on 127.0.0.1:{port} ({e.strerror}); pick another --port",
                                 param_hint="--port") from None
    console.print(f"serving the lineage page of {run_dir} on http://127.0.0.1:{server.server_address[1]}/ "
                  "(Ctrl-C stops)")
    with server:
        server.serve_forever()
