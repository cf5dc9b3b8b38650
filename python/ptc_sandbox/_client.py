"""Client and Tool: running programs, with tools that are plain Python functions.

Where the sandbox runs: `Client.embedded()` starts an engine in this process (each run still in
its own hardened `ptc-runner` process; no daemon), `Client.connect(path)` uses a
`ptc-supervisor` daemon's socket. Both give the same Steps for the same runs.

Tools: a tool is called with the program's argument map as keyword arguments
(`(tool/orders {:status "open"})` -> `fn(status="open")`), with nothing for `(tool/orders)`, and
with one positional argument for anything else. It may be a plain function or an `async def`
(awaited on the caller's event loop under `arun`, on a fresh one under `run`). What it returns
is converted to ptc data; if it raises, the program sees a `tool_error` carrying the exception's
message (which `(try ...)` can catch).
"""

from __future__ import annotations

import asyncio
import inspect
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Dict, List, Mapping, Optional, Tuple, Union

from . import _native
from ._errors import ClientError, ConversionError
from ._step import Memory, Step

if TYPE_CHECKING:
    from ._agent import Agent

#: `ptc-runner` as installed with the package (`pip install ./python` builds it into the wheel).
BUNDLED_RUNNER = Path(__file__).resolve().parent / "bin" / "ptc-runner"


def find_runner() -> Path:
    """The `ptc-runner` binary for `Client.embedded()`: `$PTC_RUNNER`, else the one installed
    with this package, else `ptc-runner` on `$PATH`."""
    env = os.environ.get("PTC_RUNNER")
    if env:
        return Path(env)
    if BUNDLED_RUNNER.is_file():
        return BUNDLED_RUNNER
    found = shutil.which("ptc-runner")
    if found:
        return Path(found)
    raise ClientError(
        "ptc-runner not found: reinstall the package (pip install ./python builds it in), "
        "set PTC_RUNNER, or put ptc-runner on PATH"
    )


class Tool:
    """A function the program may call as `(tool/NAME {...})`.

    `signature` (e.g. `"(status :string) -> [{total :int}]"`) is checked on every call, both ways;
    `description` is what an LLM is told about it. The name is the key in `tools={...}`.
    """

    __slots__ = ("fn", "signature", "description")

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        signature: Optional[str] = None,
        description: Optional[str] = None,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"Tool needs a callable, got {type(fn).__name__}")
        self.fn = fn
        self.signature = signature
        self.description = description

    def __repr__(self) -> str:
        return f"Tool({getattr(self.fn, '__name__', self.fn)!r}, signature={self.signature!r})"


ToolsArg = Optional[Mapping[str, Union[Tool, Callable[..., Any]]]]
MemoryArg = Union[None, Memory, Step, Mapping[str, Any]]


def _await(aw: Awaitable[Any], loop: Optional[asyncio.AbstractEventLoop]) -> Any:
    """Runs an awaitable from a tool thread: on `loop` if it is running, else on a new loop."""

    async def wrapped() -> Any:
        return await aw

    if loop is not None and loop.is_running():
        return asyncio.run_coroutine_threadsafe(wrapped(), loop).result()
    return asyncio.run(wrapped())


def _invoker(fn: Callable[..., Any], loop: Optional[asyncio.AbstractEventLoop]) -> Callable[[Any], Any]:
    def invoke(args: Any) -> Any:
        if args is None:
            result = fn()
        elif isinstance(args, dict):
            result = fn(**args)
        else:
            result = fn(args)
        if inspect.isawaitable(result):
            result = _await(result, loop)
        return result

    return invoke


def _tool_specs(
    tools: ToolsArg,
    loop: Optional[asyncio.AbstractEventLoop],
    cache: Optional[Dict[Tuple[str, int], Callable[[Any], Any]]] = None,
) -> List[Tuple[Any, ...]]:
    """Tools as the native layer takes them. `cache` keeps one invoker per (name, function), so
    a tool shared by several agents of a mission stays one tool."""
    cache = {} if cache is None else cache
    specs = []
    for name, tool in (tools or {}).items():
        if not isinstance(tool, Tool):
            tool = Tool(tool)
        key = (name, id(tool.fn))
        if key not in cache:
            cache[key] = _invoker(tool.fn, loop)
        specs.append((name, cache[key], tool.signature, tool.description))
    return specs


def _context(context: Any) -> Any:
    """The context must be a mapping (its keys are the programs' `data/NAME`)."""
    if context is None or isinstance(context, dict):
        return context
    if isinstance(context, Mapping):
        return dict(context)
    err = ConversionError(
        f"context: must be a dict (read as data/NAME), got {type(context).__name__}"
    )
    err.path = "context"
    raise err


def _memory(memory: MemoryArg) -> Any:
    if isinstance(memory, Step):
        memory = memory.memory
    if isinstance(memory, Memory):
        return memory._native
    return memory


class Client:
    """Runs PTC-Lisp programs. Share one client between threads and tasks; it is cheap to keep.

    >>> client = Client.embedded()
    >>> client.run("(+ 1 2)").value
    3
    """

    __slots__ = ("_native",)

    def __init__(self, native: Any) -> None:
        self._native = native

    @classmethod
    def embedded(cls, *, runner: Union[str, "os.PathLike[str]", None] = None) -> "Client":
        """An engine in this process: every run in a fresh sandboxed `ptc-runner` (found by
        `find_runner()` unless `runner` is given), under the built-in policies."""
        path = Path(runner) if runner is not None else find_runner()
        if not path.is_file():
            raise ClientError(f"ptc-runner not found at {path}")
        return cls(_native.NativeClient.embedded(str(path)))

    @classmethod
    def connect(cls, path: Union[str, "os.PathLike[str]"]) -> "Client":
        """A connection to a `ptc-supervisor` daemon at the socket `path`."""
        return cls(_native.NativeClient.connect(os.fspath(path)))

    def _args(self, program: str, tools: ToolsArg, loop: Any, **kw: Any) -> Dict[str, Any]:
        if not isinstance(program, str):
            raise TypeError(f"program must be a str, got {type(program).__name__}")
        kw["memory"] = _memory(kw["memory"])
        kw["context"] = _context(kw["context"])
        return dict(program=program, tools=_tool_specs(tools, loop), **kw)

    def run(
        self,
        program: str,
        *,
        tools: ToolsArg = None,
        context: Optional[Mapping[str, Any]] = None,
        signature: Optional[str] = None,
        timeout_ms: Optional[int] = None,
        max_steps: Optional[int] = None,
        memory: MemoryArg = None,
        policy: Optional[str] = None,
    ) -> Step:
        """Runs `program` and returns its Step (a failure is a Step too: see `Step.ok`,
        `Step.raise_for_fail()`). Blocks without holding the GIL.

        `context` is read by the program as `data/NAME`; `signature` (e.g. `"() -> :int"`)
        checks the result; `timeout_ms` and `max_steps` may tighten the policy's limits, never
        loosen them; `memory` is an earlier Step (or its `.memory`) to continue from; `policy`
        names one of the engine's policies. Data that does not convert raises `ConversionError`.
        """
        args = self._args(
            program, tools, None, context=context, signature=signature,
            timeout_ms=timeout_ms, max_steps=max_steps, memory=memory, policy=policy,
        )
        return Step(self._native.run(args))

    async def arun(
        self,
        program: str,
        *,
        tools: ToolsArg = None,
        context: Optional[Mapping[str, Any]] = None,
        signature: Optional[str] = None,
        timeout_ms: Optional[int] = None,
        max_steps: Optional[int] = None,
        memory: MemoryArg = None,
        policy: Optional[str] = None,
    ) -> Step:
        """`run` for asyncio: awaits the Step without blocking the event loop. `async def`
        tools run on this loop. Cancelling the task cancels the run (its runner is killed)."""
        loop = asyncio.get_running_loop()
        args = self._args(
            program, tools, loop, context=context, signature=signature,
            timeout_ms=timeout_ms, max_steps=max_steps, memory=memory, policy=policy,
        )
        return Step(await _settle_on(loop, lambda done: self._native.start(args, done)))

    def delegate(self, agent: "Agent", *, context: Optional[Mapping[str, Any]] = None) -> Step:
        """Runs a SubAgent mission: the agent's LLM writes programs turn by turn (each run in a
        fresh sandbox, `def`s kept between turns) until one returns a value matching the
        agent's signature. The Step has the value, `usage.turns`, tokens and the `trace`; a
        budget or LLM failure is a failed Step (`MaxTurnsExceeded`, `LlmError`, ...). `context`
        fills the prompt's `{{placeholders}}` and is the programs' `data/`."""
        spec = agent._spec(None, {})
        return Step(self._native.delegate(spec, _context(context)))

    async def adelegate(
        self, agent: "Agent", *, context: Optional[Mapping[str, Any]] = None
    ) -> Step:
        """`delegate` for asyncio: `async def` tools and LLMs run on this loop."""
        loop = asyncio.get_running_loop()
        spec = agent._spec(loop, {})
        return Step(
            await _settle_on(loop, lambda done: self._native.start_delegate(spec, _context(context), done))
        )


async def _settle_on(loop: asyncio.AbstractEventLoop, start: Callable[[Any], Any]) -> Any:
    """Starts a native operation whose `done(payload)` fires on another thread, and awaits it."""
    fut: "asyncio.Future[Any]" = loop.create_future()

    def settle(payload: Any) -> None:
        if fut.done():
            return
        if isinstance(payload, BaseException):
            fut.set_exception(payload)
        else:
            fut.set_result(payload)

    def done(payload: Any) -> None:
        if not loop.is_closed():
            loop.call_soon_threadsafe(settle, payload)

    handle = start(done)
    try:
        return await fut
    except asyncio.CancelledError:
        handle.cancel()
        raise
