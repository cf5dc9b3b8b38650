"""Agent: a SubAgent mission's description, with its LLM as a Python callable.

The LLM is called with one request dict, `{"system": str, "messages": [{"role": "user" |
"assistant", "content": str}], "turn": int, "agent": "main/child", "model": str | None}`, and
answers with the text (one ```clojure block per turn) or `{"content": str, "usage":
{"input_tokens": int, "output_tokens": int}}`. It may be `async def`. Raising
`RetryableLlmError` asks for a retry; any other exception ends the mission with `llm_error`.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Callable, Dict, Optional, Sequence

from ._client import ToolsArg, _await, _tool_specs


def _llm_invoker(llm: Callable[[Dict[str, Any]], Any], loop: Optional[asyncio.AbstractEventLoop]):
    def invoke(request: Dict[str, Any]) -> Any:
        answer = llm(request)
        if inspect.isawaitable(answer):
            answer = _await(answer, loop)
        return answer

    return invoke


class Agent:
    """An agent: a prompt template (`{{name}}` filled from the context), a signature its
    answer must match, tools, nested agents (callable as tools by name), budgets, and the LLM.

    Mission-wide settings (`llm`, `turn_budget`, `max_depth`, `mission_timeout_ms`,
    `token_budget`) are read from the agent given to `Client.delegate`; a nested agent inherits
    its parent's LLM and needs a `name` and a `description`.
    """

    def __init__(
        self,
        prompt: str,
        *,
        signature: Optional[str] = None,
        tools: ToolsArg = None,
        llm: Optional[Callable[[Dict[str, Any]], Any]] = None,
        name: Optional[str] = None,
        description: Optional[str] = None,
        agents: Sequence["Agent"] = (),
        max_turns: Optional[int] = None,
        model: Optional[str] = None,
        turn_timeout_ms: Optional[int] = None,
        policy: Optional[str] = None,
        turn_budget: Optional[int] = None,
        max_depth: Optional[int] = None,
        mission_timeout_ms: Optional[int] = None,
        token_budget: Optional[int] = None,
    ) -> None:
        if llm is not None and not callable(llm):
            raise TypeError(f"llm must be callable, got {type(llm).__name__}")
        self.prompt = prompt
        self.signature = signature
        self.tools = dict(tools or {})
        self.llm = llm
        self.name = name
        self.description = description
        self.agents = list(agents)
        self.max_turns = max_turns
        self.model = model
        self.turn_timeout_ms = turn_timeout_ms
        self.policy = policy
        self.turn_budget = turn_budget
        self.max_depth = max_depth
        self.mission_timeout_ms = mission_timeout_ms
        self.token_budget = token_budget

    def _spec(self, loop: Optional[asyncio.AbstractEventLoop], cache: Dict[Any, Any]) -> Dict[str, Any]:
        """The agent tree as the native layer takes it."""
        return {
            "prompt": self.prompt,
            "name": self.name,
            "description": self.description,
            "signature": self.signature,
            "tools": _tool_specs(self.tools, loop, cache),
            "agents": [a._spec(loop, cache) for a in self.agents],
            "max_turns": self.max_turns,
            "model": self.model,
            "turn_timeout_ms": self.turn_timeout_ms,
            "policy": self.policy,
            "llm": _llm_invoker(self.llm, loop) if self.llm is not None else None,
            "turn_budget": self.turn_budget,
            "max_depth": self.max_depth,
            "mission_timeout_ms": self.mission_timeout_ms,
            "token_budget": self.token_budget,
        }

    def __repr__(self) -> str:
        return f"Agent({self.prompt!r}, name={self.name!r}, signature={self.signature!r})"
