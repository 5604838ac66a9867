"""`meta-agent llm ...`: check a model before a run, read transcripts, see what a run spent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from meta_agent.coders import ExternalCoderName
from meta_agent.commands.app import App

if TYPE_CHECKING:
    from meta_agent.config import LLMSettings

app = App(help="Check the meta-agent's LLM and read what its agents did.")

CHECK_SYSTEM = "You are meta-agent's connectivity check. Answer by calling the tool you are given."
CHECK_USER = "Use the add tool to add 2 and 3."
ADD_TOOL = {"type": "function", "function": {
    "name": "add", "description": "Add two integers.",
    "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                   "required": ["a", "b"]}}}


def _fail(msg: str) -> typer.Exit:
    typer.secho(f"error: {msg}", fg="red", err=True)
    return typer.Exit(1)


@app.command()
def check(
    model: Annotated[str | None, typer.Option(help="litellm model, e.g. anthropic/claude-sonnet-4-6")] = None,
    api_base: Annotated[str | None, typer.Option(help="OpenAI-compatible base URL (vLLM, llama.cpp, Ollama)")] = None,
    timeout: Annotated[float | None, typer.Option(help="seconds per call")] = None,
    config: Annotated[Path | None, typer.Option("--config", help="YAML file; its llm: section is used")] = None,
    coder: Annotated[ExternalCoderName | None, typer.Option(
        metavar="<coder>", help="mini-swe-agent | claude-code | codex: also check that external coder (installed, "
                                "its model's API, key, endpoint; no agent run)")] = None,
) -> None:
    """Make one tiny tool-calling request: reports latency, tokens, cost and whether the model calls tools."""
    from meta_agent.config import ConfigFileError, LLMSettings, build, load_config_file
    from meta_agent.llm import Ledger, LLMClient, LLMError, RetryPolicy

    try:
        settings: LLMSettings = build(LLMSettings, load_config_file(config).get("llm", {}),
                                      {"model": model, "api_base": api_base, "timeout_s": timeout})
    except ConfigFileError as e:
        raise _fail(str(e)) from None
    if not settings.model:
        raise _fail("no model: pass --model (e.g. anthropic/claude-sonnet-4-6) or set llm.model in --config")
    if coder:
        _check_coder(settings.model_copy(update={"coder": coder}))
    client = LLMClient(settings.model, ledger=Ledger(), api_base=settings.api_base, timeout_s=settings.timeout_s,
                       retry=RetryPolicy(attempts=2, initial_s=1, max_s=5))
    try:
        client.check_credentials()
        reply = client.complete([{"role": "system", "content": CHECK_SYSTEM}, {"role": "user", "content": CHECK_USER}],
                                [ADD_TOOL], agent="check")
    except LLMError as e:
        raise _fail(str(e)) from None
    price = client.price()
    cost = "unknown (litellm has no price for this model)" if reply.cost is None else f"${reply.cost:.6f}"
    call = next((c for c in reply.tool_calls if c.name == "add"), None)
    if call is None:
        tools = f"no: answered in text ({reply.content[:80]!r})"
    else:
        try:
            ok = json.loads(call.arguments) == {"a": 2, "b": 3}
        except json.JSONDecodeError:
            ok = False
        tools = f"yes: add({call.arguments})" + ("" if ok else " (unexpected arguments)")
    listed = client.supports_tools()
    typer.echo(f"model        {settings.model}" + (f" at {settings.api_base}" if settings.api_base else ""))
    typer.echo(f"latency      {reply.latency_s:.2f} s ({reply.attempts} attempt{'s' if reply.attempts > 1 else ''})")
    typer.echo(f"tokens       {reply.prompt_tokens} prompt + {reply.completion_tokens} completion")
    typer.echo(f"cost         {cost}")
    if price is not None:
        typer.echo(f"price        ${price[0] * 1e6:.2f} / ${price[1] * 1e6:.2f} per million prompt / completion tokens")
    typer.echo(f"tool calling {tools}; litellm's model map says "
               f"{'unknown' if listed is None else 'supported' if listed else 'unsupported'}")
    if call is None:
        raise typer.Exit(2)


def _check_coder(settings: LLMSettings) -> None:
    """The checks `evolve --coder` makes before any training, and where the agent was found."""
    import tempfile

    from meta_agent.agents.external.agents import CLI_PATHS, coders_dir
    from meta_agent.agents.external.coder import external_coder
    from meta_agent.config import ConfigFileError
    from meta_agent.llm import Ledger, LLMBudget

    with tempfile.TemporaryDirectory() as tmp:
        try:
            found = external_coder(settings, Ledger(), LLMBudget(), Path(tmp))
        except ConfigFileError as e:
            raise _fail(str(e)) from None
    where = coders_dir() / CLI_PATHS[settings.coder] if settings.coder in CLI_PATHS else "meta-agent's venv"
    typer.echo(f"coder        {settings.coder} ({where}); model {found.agent.model} over the "
               f"{found.agent.api} API at {found.upstream.base}: reachable")


@app.command()
def transcript(
    file: Annotated[Path, typer.Argument(help="a transcripts/*.jsonl file of a run")],
    full: Annotated[bool, typer.Option(help="do not shorten long messages and tool results")] = False,
) -> None:
    """Print an agent transcript as a readable session: prompts, replies, tool calls and results, costs."""
    from meta_agent.llm.transcript import render

    if not file.is_file():
        raise _fail(f"{file} does not exist; transcripts are in <run_dir>/transcripts/")
    typer.echo(render(file, limit=None if full else 600), nl=False)


@app.command()
def usage(
    run_dir: Annotated[Path, typer.Argument(help="an evolve run directory")],
    json_: Annotated[bool, typer.Option("--json", help="print JSON: total, by_agent, by_scope")] = False,
) -> None:
    """Tokens, calls and dollars a run's LLM agents used: in total, per agent and per generation."""
    from meta_agent.llm.accounting import USAGE_FILE, Ledger

    path = run_dir / USAGE_FILE
    if not path.is_file():
        raise _fail(f"{path} does not exist: the run made no LLM calls (or is not an evolve run with --proposer llm)")
    state = Ledger(path).state
    if json_:
        typer.echo(state.model_dump_json(indent=2))
        return
    rows = [("total", state.total), *sorted(state.by_agent.items()), *sorted(state.by_scope.items())]
    typer.echo(f"{'':16} {'calls':>6} {'prompt':>10} {'completion':>10} {'dollars':>10} {'cached':>7} "
               f"{'cached tok':>10}")
    for name, u in rows:
        dollars = f"{u.dollars:.4f}" + ("*" if u.unpriced_calls else "")
        typer.echo(f"{name:16} {u.calls:6d} {u.prompt_tokens:10,d} {u.completion_tokens:10,d} {dollars:>10} "
                   f"{u.cached_calls:7d} {u.cached_tokens:10,d}")
    typer.echo("calls, tokens and dollars are what was paid; cached replies came from the response cache, free")
    if state.total.unpriced_calls:
        typer.echo(f"* {state.total.unpriced_calls} calls to models without a price in litellm's map count as $0")
