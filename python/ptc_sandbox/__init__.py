"""ptc_sandbox: run untrusted, LLM-written PTC-Lisp programs in hardened sandboxes, from Python.

    import ptc_sandbox as ptc

    client = ptc.Client.embedded()          # or ptc.Client.connect("/run/ptc/ptc.sock")
    step = client.run(
        "(->> (tool/orders {:status \\"open\\"}) (map :total) (reduce +))",
        tools={"orders": ptc.Tool(fetch_orders, signature="(status :string) -> [{total :int}]")},
        signature="() -> :int", timeout_ms=500,
    )
    step.raise_for_fail().value

    agent = ptc.Agent("Find the top customer in {{region}}", signature="(region :string) -> {name :string}",
                      tools={...}, llm=my_llm)      # my_llm(request) -> str | {"content", "usage"}
    step = client.delegate(agent, context={"region": "eu"})

A native extension over the Rust client library (`ptc_sandbox._native`): the same engine, wire
protocol and Step as the `ptc` CLI.
"""

from ._agent import Agent
from ._client import Client, Tool, find_runner
from ._errors import (
    BY_REASON,
    AnalysisError,
    Busy,
    Cancelled,
    ChainedFailure,
    ClientError,
    ConversionError,
    EvalError,
    InvalidRequest,
    LimitExceeded,
    LlmError,
    MaxDepthExceeded,
    MaxTurnsExceeded,
    MemoryExceeded,
    MissionTimeout,
    ModelNotFound,
    ParseError,
    PermissionDenied,
    ProgramFailed,
    PtcError,
    RetryableLlmError,
    ReservedToolName,
    RunnerCrashed,
    SandboxViolation,
    TemplateError,
    Timeout,
    TokenBudgetExhausted,
    ToolError,
    ToolNotFound,
    TurnBudgetExhausted,
    ValidationError,
)
from ._native import FAIL_REASONS, __version__
from ._step import Fail, Memory, Step, Usage

__all__ = [
    "Client", "Tool", "Agent", "RetryableLlmError", "Step", "Fail", "Usage", "Memory", "find_runner",
    "PtcError", "ConversionError", "ClientError", "BY_REASON", "FAIL_REASONS",
    "ParseError", "AnalysisError", "EvalError", "Timeout", "MemoryExceeded", "ValidationError",
    "ToolError", "ToolNotFound", "ProgramFailed", "LimitExceeded", "SandboxViolation",
    "RunnerCrashed", "Busy", "Cancelled", "PermissionDenied", "InvalidRequest",
    "MaxTurnsExceeded", "TurnBudgetExhausted", "MaxDepthExceeded", "MissionTimeout",
    "TokenBudgetExhausted", "LlmError", "TemplateError", "ChainedFailure", "ReservedToolName",
    "ModelNotFound", "__version__",
]
