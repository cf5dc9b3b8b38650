"""Step: what every run (and every agent mission) ends in, whatever happened.

A Step is built once from the native layer's dict and is read-only in spirit: `to_dict()` gives
back a fresh copy in the shape of `ptc run --format json` (keywords as strings).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Mapping, Optional

from . import _errors


@dataclass(frozen=True)
class Fail:
    """Why a run failed.

    `reason` is what surfaces show: a typed reason such as `"timeout"`, or a program's own reason
    (`(fail {:reason :not_found})` -> `"not_found"`, with `kind == "program"`). `system_reason`
    is always the typed one (`"failed"` there) and picks the exception class.
    """

    reason: str
    kind: str
    system_reason: str
    message: str
    op: Optional[str]
    details: Any


@dataclass(frozen=True)
class Usage:
    """What a run used. Token fields are set only when an LLM was involved."""

    duration_ms: int = 0
    cpu_ms: int = 0
    memory_bytes: int = 0
    eval_steps: int = 0
    tool_calls: int = 0
    input_tokens: Optional[int] = None
    output_tokens: Optional[int] = None
    total_tokens: Optional[int] = None
    requests: int = 0
    turns: int = 0


class Memory(Mapping[str, Any]):
    """The program's memory after a run (`def`s), as a read-only mapping.

    Pass it (or the Step) as the next run's `memory=` to continue exactly where this run left
    off: the native value is kept, so keywords stay keywords. To change it, build a dict
    (`{**step.memory, "limit": 5}`); a dict converts like any other data (strings stay strings).
    """

    __slots__ = ("_data", "_native")

    def __init__(self, data: Dict[Any, Any], native: Any) -> None:
        self._data = data
        self._native = native

    def __getitem__(self, key: Any) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"Memory({self._data!r})"


class Step:
    """The outcome of one run: the value or the failure, memory, prints, tool calls, usage.

    Exactly one of `value` (when `ok`) and `fail` is meaningful.
    """

    __slots__ = (
        "ok", "value", "fail", "memory", "memory_delta", "history", "signature",
        "prints", "warnings", "tool_calls", "usage", "trace", "_raw",
    )

    ok: bool
    value: Any
    fail: Optional[Fail]
    memory: Memory
    memory_delta: Dict[Any, Any]
    history: List[Any]
    signature: Optional[str]
    prints: List[str]
    warnings: List[str]
    tool_calls: List[Dict[str, Any]]
    usage: Usage
    trace: List[Dict[str, Any]]

    def __init__(self, raw: Dict[str, Any]) -> None:
        fail = raw["fail"]
        self._raw = raw
        self.ok = fail is None
        self.value = raw["return"]
        self.fail = Fail(**fail) if fail is not None else None
        self.memory = Memory(raw["memory"], raw["memory_native"])
        self.memory_delta = raw["memory_delta"]
        self.history = raw["history"]
        self.signature = raw["signature"]
        self.prints = raw["prints"]
        self.warnings = raw["warnings"]
        self.tool_calls = raw["tool_calls"]
        self.usage = Usage(**raw["usage"])
        self.trace = raw["trace"]

    def raise_for_fail(self) -> "Step":
        """Returns the Step if it succeeded; raises the reason's exception (a `PtcError`) if not."""
        if self.fail is None:
            return self
        raise _errors.BY_REASON.get(self.fail.system_reason, _errors.PtcError)(
            self.fail.message, self
        )

    def to_dict(self) -> Dict[str, Any]:
        """The Step as plain data, keyed like `ptc run --format json` (a fresh copy)."""
        out = {k: v for k, v in self._raw.items() if k != "memory_native"}
        out = copy.deepcopy(out)
        if out["fail"] is not None:
            out["fail"].pop("system_reason", None)
        return out

    def __repr__(self) -> str:
        if self.fail is None:
            return f"Step(ok, value={self.value!r})"
        return f"Step(fail={self.fail.reason}: {self.fail.message!r})"
