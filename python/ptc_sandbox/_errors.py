"""Exceptions: one class per failure reason, under one base, `PtcError`.

A failed Step raises from `Step.raise_for_fail()` as the class of its typed reason
(`timeout` -> `Timeout`, ...). A program's own `(fail {:reason :not_found ...})` has the typed
reason `failed` (`ProgramFailed`), with `exc.reason == "not_found"`. Problems found before a run
starts are not Steps: data that does not convert (`ConversionError`, naming the path) and a client
that cannot be built or connected (`ClientError`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Optional, Type

if TYPE_CHECKING:
    from ._step import Step


class PtcError(Exception):
    """Base of every ptc_sandbox error.

    For a failed Step: `step` is the Step, `reason` the reason as shown (a program's own reason
    for `ProgramFailed`), `message` the one-line message. Otherwise `step` is None.
    """

    step: Optional["Step"] = None
    reason: str = ""
    message: str = ""

    def __init__(self, message: str = "", step: Optional["Step"] = None) -> None:
        super().__init__(message)
        self.message = message
        self.step = step
        if step is not None and step.fail is not None:
            self.reason = step.fail.reason
            self.message = step.fail.message

    def __str__(self) -> str:
        if self.step is not None and self.reason:
            return f"{self.reason}: {self.message}"
        return self.message


class ConversionError(PtcError, TypeError):
    """A Python value has no ptc form. `path` says where, e.g. `context['orders'][2]`."""

    path: str = ""


class ClientError(PtcError):
    """A client could not be built (no `ptc-runner`, bad policies) or could not connect."""


class RetryableLlmError(PtcError):
    """Raise it from an LLM callable for a failure worth retrying (rate limit, timeout): the
    mission retries with backoff and spends no turn. Any other exception is `llm_error`."""


# The closed set of typed reasons (ptc_shared::FailReason), each with its class.


class ParseError(PtcError):
    """`parse_error`: the program does not read as PTC-Lisp."""


class AnalysisError(PtcError):
    """`analysis_error`: the program uses something the language forbids."""


class EvalError(PtcError):
    """`eval_error`: the program failed while running."""


class Timeout(PtcError):
    """`timeout`: the run passed its wall-clock limit."""


class MemoryExceeded(PtcError):
    """`memory_exceeded`: the run passed its memory limit."""


class ValidationError(PtcError):
    """`validation_error`: data did not match a signature."""


class ToolError(PtcError):
    """`tool_error`: a tool failed (a Python tool raised, or returned unconvertible data)."""


class ToolNotFound(PtcError):
    """`tool_not_found`: the program called a tool it was not given."""


class ProgramFailed(PtcError):
    """`failed`: the program called `fail` (its own reason is `exc.reason`)."""


class LimitExceeded(PtcError):
    """`limit_exceeded`: the run passed another limit (steps, output, tool calls)."""


class SandboxViolation(PtcError):
    """`sandbox_violation`: the runner tried a forbidden operation."""


class RunnerCrashed(PtcError):
    """`runner_crashed`: the runner died, or the connection was lost."""


class Busy(PtcError):
    """`busy`: the daemon is at capacity and did not queue the run."""


class Cancelled(PtcError):
    """`cancelled`: the run was cancelled."""


class PermissionDenied(PtcError):
    """`permission_denied`: the daemon refused this caller."""


class InvalidRequest(PtcError):
    """`invalid_request`: the request itself was malformed."""


class MaxTurnsExceeded(PtcError):
    """`max_turns_exceeded`: the agent used its turns without returning."""


class TurnBudgetExhausted(PtcError):
    """`turn_budget_exhausted`: the agent tree used its shared turn budget."""


class MaxDepthExceeded(PtcError):
    """`max_depth_exceeded`: a nested agent would run too deep."""


class MissionTimeout(PtcError):
    """`mission_timeout`: the mission passed its time limit."""


class TokenBudgetExhausted(PtcError):
    """`token_budget_exhausted`: the mission used its token budget."""


class LlmError(PtcError):
    """`llm_error`: the LLM callable failed."""


class TemplateError(PtcError):
    """`template_error`: the prompt names a {{placeholder}} the context lacks."""


class ChainedFailure(PtcError):
    """`chained_failure`: the mission's context is a failed Step."""


class ReservedToolName(PtcError):
    """`reserved_tool_name`: a tool or agent is named `return` or `fail`."""


class ModelNotFound(PtcError):
    """`model_not_found`: an agent names a model the client does not know."""


#: The exception class for each typed reason's wire name.
BY_REASON: Dict[str, Type[PtcError]] = {
    "parse_error": ParseError,
    "analysis_error": AnalysisError,
    "eval_error": EvalError,
    "timeout": Timeout,
    "memory_exceeded": MemoryExceeded,
    "validation_error": ValidationError,
    "tool_error": ToolError,
    "tool_not_found": ToolNotFound,
    "failed": ProgramFailed,
    "limit_exceeded": LimitExceeded,
    "sandbox_violation": SandboxViolation,
    "runner_crashed": RunnerCrashed,
    "busy": Busy,
    "cancelled": Cancelled,
    "permission_denied": PermissionDenied,
    "invalid_request": InvalidRequest,
    "max_turns_exceeded": MaxTurnsExceeded,
    "turn_budget_exhausted": TurnBudgetExhausted,
    "max_depth_exceeded": MaxDepthExceeded,
    "mission_timeout": MissionTimeout,
    "token_budget_exhausted": TokenBudgetExhausted,
    "llm_error": LlmError,
    "template_error": TemplateError,
    "chained_failure": ChainedFailure,
    "reserved_tool_name": ReservedToolName,
    "model_not_found": ModelNotFound,
}
