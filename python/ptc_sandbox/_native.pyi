"""Type stubs for the native extension (`python/src/lib.rs`). Internal: use `ptc_sandbox`."""

from typing import Any, Callable, Dict, List, Optional, Tuple

#: Every typed failure reason's wire name (ptc_shared::FailReason::ALL).
FAIL_REASONS: List[str]
__version__: str

ToolSpec = Tuple[str, Callable[[Any], Any], Optional[str], Optional[str]]

class NativeValue:
    """A ptc value kept exactly (a Step's memory)."""

class NativeRun:
    def cancel(self) -> None:
        """Cancels the run: its runner is killed and the Step says `cancelled`."""

class NativeClient:
    @staticmethod
    def embedded(runner: str) -> "NativeClient": ...
    @staticmethod
    def connect(path: str) -> "NativeClient": ...
    def run(self, args: Dict[str, Any]) -> Dict[str, Any]:
        """`args`: program, tools (list of ToolSpec), context, memory, signature, timeout_ms,
        max_steps, policy. Returns the Step as a dict; blocks without the GIL."""
    def start(self, args: Dict[str, Any], done: Callable[[Any], None]) -> NativeRun:
        """Like `run`, but returns at once; `done(step_dict)` is called from another thread."""
    def delegate(self, agent: Dict[str, Any], context: Any) -> Dict[str, Any]:
        """`agent`: the tree as `Agent._spec` builds it. Returns the mission's Step as a dict."""
    def start_delegate(
        self, agent: Dict[str, Any], context: Any, done: Callable[[Any], None]
    ) -> NativeRun: ...
