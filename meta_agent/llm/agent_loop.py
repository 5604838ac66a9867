"""The tool-calling loop every agent runs: ask, run the tools it calls, answer, until a final tool.

Bad model behaviour ends the loop with a reason instead of hanging or crashing it: a malformed
tool call gets one repair request (a second one in a row fails), a reply without tool calls gets
one nudge, tool output is cut to a size with a marker, tool-call arguments over a size are refused,
the number of tool calls is capped, a tool that raises on the model's input answers with the error,
and a reply no client can read ends the session with that reason.

A reply is marked *handled* in the response cache only once the loop has acted on it: a reply whose
handling crashed is never served again from the cache, so a resumed run asks the model anew.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from meta_agent.errors import BudgetExhausted, failure_text
from meta_agent.llm.client import LLMClient
from meta_agent.llm.errors import LLMBadReply, LLMError
from meta_agent.llm.reply import ChatReply
from meta_agent.llm.text import bound, clean_text
from meta_agent.llm.tools import BadToolCall, Tool, ToolResult, parse_arguments
from meta_agent.llm.transcript import Transcript

MAX_MESSAGE_CHARS = 200_000
"""What one message the loop adds may hold: every later call re-sends it."""


def truncate(text: str, limit: int) -> str:
    """Tool output an agent asked for, bounded: head and tail around a marker that says how to ask for less."""
    return bound(text, limit, "ask for a narrower range or pattern")


@dataclass
class LoopResult:
    finished: bool
    """A final tool (submit, commit, give up, ...) ended the loop; its value is in `value`."""
    value: Any = None
    reason: str = ""
    """Why the loop stopped without a final tool."""
    steps: int = 0


class AgentSession:
    """One conversation with one agent: the messages so far, the client, the transcript."""

    def __init__(self, client: LLMClient, transcript: Transcript, *, agent: str, scope: str | None,
                 system: str, user: str) -> None:
        self.client = client
        self.transcript = transcript
        self.agent = agent
        self.scope = scope
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": system},
                                               {"role": "user", "content": user}]
        self._logged = 0

    def ask(self, tools: list[Tool]) -> ChatReply:
        reply = self.client.complete(self.messages, [t.schema() for t in tools], agent=self.agent, scope=self.scope,
                                     transcript=self.transcript, new_messages=self.messages[self._logged:])
        self.messages.append(reply.assistant_message())
        self._logged = len(self.messages)
        return reply

    def handled(self, reply: ChatReply) -> None:
        """The loop has acted on `reply`: from now on the cache may serve it to a resumed run."""
        self.client.handled(reply)

    def say(self, text: str) -> None:
        self.messages.append({"role": "user", "content": _safe(text)})

    def remind(self, text: str) -> None:
        """A note from the loop: appended to the last tool result when there is one (the turn structure the
        model expects stays the same), else said as a user message."""
        last = self.messages[-1]
        if last.get("role") == "tool" and len(self.messages) > self._logged:
            last["content"] = _safe(f"{last['content']}\n\n[meta-agent] {text}")
        else:
            self.say(text)

    def answer(self, call_id: str, text: str) -> None:
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": _safe(text)})


def _safe(text: str) -> str:
    """Text the next request may carry: no lone surrogates (no UTF-8 encoder takes them), bounded."""
    return bound(clean_text(text), MAX_MESSAGE_CHARS)


@dataclass
class _Streaks:
    steps: int = 0
    bad: int = 0
    silent: int = 0


def run_tool_loop(session: AgentSession, tools: list[Tool], *, max_steps: int, max_result_chars: int = 12_000,
                  nudge: str = "Continue by calling one of your tools.", max_tokens: int | None = None,
                  finish: str = "Finish now with your final tool.", deadline_s: float | None = None) -> LoopResult:
    """`max_tokens`: prompt + completion tokens of the whole session (cached replies count too, so a resumed
    run takes the same path); past 80% the model is told once to finish, at 100% the loop stops.
    `deadline_s`: wall-clock seconds for the whole session; checked before every call to the model."""
    by_name = {t.name: t for t in tools}
    streaks = _Streaks()
    tokens = 0
    warned = False
    log = session.transcript
    started = time.monotonic()
    while True:
        if deadline_s is not None and time.monotonic() - started >= deadline_s:
            reason = f"time limit reached: {deadline_s:.0f} s without finishing"
            log.note(reason)
            return LoopResult(finished=False, reason=reason, steps=streaks.steps)
        if max_tokens is not None and tokens >= max_tokens:
            reason = f"token budget reached: {tokens:,} of {max_tokens:,} tokens without finishing"
            log.note(reason)
            return LoopResult(finished=False, reason=reason, steps=streaks.steps)
        if max_tokens is not None and not warned and tokens >= 0.8 * max_tokens:
            warned = True
            log.note(f"{tokens:,} of {max_tokens:,} tokens used: asking the model to finish")
            session.remind(f"You have used {tokens:,} of your {max_tokens:,}-token budget. {finish}")
        try:
            reply = session.ask(tools)
        except LLMBadReply as e:
            reason = f"the model's reply could not be used: {e}"
            log.note(reason)
            return LoopResult(finished=False, reason=reason, steps=streaks.steps)
        tokens += reply.prompt_tokens + reply.completion_tokens
        outcome = _act(session, reply, by_name, streaks, max_steps=max_steps, max_result_chars=max_result_chars,
                       nudge=nudge)
        session.handled(reply)
        if outcome is not None:
            return outcome


def _act(session: AgentSession, reply: ChatReply, by_name: dict[str, Tool], streaks: _Streaks, *, max_steps: int,
         max_result_chars: int, nudge: str) -> LoopResult | None:
    """Act on one reply: run its tool calls and answer each. A LoopResult when the session ends here."""
    log = session.transcript
    if not reply.tool_calls:
        streaks.silent += 1
        if streaks.silent > 1:
            reason = f"the model answered twice without calling a tool (last: {reply.content[:200]!r})"
            log.note(reason)
            return LoopResult(finished=False, reason=reason, steps=streaks.steps)
        log.note("no tool call in the reply: nudging once")
        session.say(nudge)
        return None
    streaks.silent = 0
    for call in reply.tool_calls:
        if streaks.steps >= max_steps:
            reason = f"step cap reached: {max_steps} tool calls without finishing"
            log.note(reason)
            return LoopResult(finished=False, reason=reason, steps=streaks.steps)
        streaks.steps += 1
        started = time.monotonic()
        tool = by_name.get(call.name)
        try:
            if tool is None:
                raise BadToolCall(f"there is no tool {call.name!r}; the tools are {', '.join(by_name)}")
            if call.cut:
                raise BadToolCall(f"arguments of {call.name} are {len(call.arguments) + call.cut:,} characters, "
                                  f"over the {len(call.arguments):,}-character limit; send smaller pieces")
            args = parse_arguments(tool, call.arguments)
        except BadToolCall as e:
            streaks.bad += 1
            log.tool(call.id, call.name, call.arguments, f"error: {e}", False, time.monotonic() - started)
            if streaks.bad > 1:
                reason = f"malformed tool call again after a repair request: {e}"
                log.note(reason)
                return LoopResult(finished=False, reason=reason, steps=streaks.steps)
            log.note("malformed tool call: asking the model to repair it (once)")
            session.answer(call.id, f"error: {e}. Call the tool again with arguments that match its schema.")
            continue
        streaks.bad = 0
        result = _run(tool, args)
        text = truncate(result.text, max_result_chars)
        log.tool(call.id, call.name, call.arguments, text, result.ok, time.monotonic() - started)
        session.answer(call.id, text)
        if result.done:
            return LoopResult(finished=True, value=result.value, steps=streaks.steps)
    return None


def _run(tool: Tool, args: Any) -> ToolResult:
    """The tool's result; a tool that raises on what the model asked for (a path the OS refuses, data it cannot
    encode) answers with the error, as any failed call does. Budget stops and LLM errors still stop."""
    try:
        return tool.run(args)
    except (BudgetExhausted, LLMError, KeyboardInterrupt):
        raise
    except Exception as e:
        return ToolResult(f"error: {tool.name} failed on these arguments: {failure_text(e, 500)}", ok=False)
