"""SubAgent missions with scripted LLMs: the loop, memory between turns, nesting, budgets."""

import asyncio

import pytest

import ptc_sandbox as ptc


def clojure(code: str) -> str:
    return f"Here is the program:\n```clojure\n{code}\n```"


class Script:
    """A stand-in LLM that answers each request with the next scripted answer."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.requests = []

    def __call__(self, request):
        self.requests.append(request)
        if not self.answers:
            raise RuntimeError("the script ran out of answers")
        return self.answers.pop(0)


def orders(region):
    return [{"customer": "Chen", "total": 200}, {"customer": "Ana", "total": 120},
            {"customer": "Chen", "total": 30}]


def test_a_mission_returns_over_two_turns_with_memory_between_them(client):
    llm = Script(
        clojure('(def by (group-by :customer (tool/orders {:region data/region})))\n(count by)'),
        {"content": clojure(
            "(return {:name (key (apply max-key #(reduce + (map :total (val %))) memory/by))})"),
         "usage": {"input_tokens": 100, "output_tokens": 20}},
    )
    agent = ptc.Agent(
        "Find the top customer in {{region}}",
        signature="(region :string) -> {name :string}",
        tools={"orders": ptc.Tool(orders, signature="(region :string) -> [:map]")},
        llm=llm,
    )
    step = client.delegate(agent, context={"region": "eu"})
    assert step.raise_for_fail().value == {"name": "Chen"}
    assert step.usage.turns == 2 and step.usage.requests == 2
    assert step.usage.output_tokens == 20
    assert "eu" in llm.requests[0]["messages"][0]["content"]
    assert llm.requests[0]["turn"] == 1 and llm.requests[1]["turn"] == 2
    assert llm.requests[0]["agent"] == "main" and llm.requests[0]["system"]
    assert len(step.trace) >= 2


def test_an_async_llm_and_tool_under_adelegate(client):
    async def llm(request):
        await asyncio.sleep(0)
        return clojure("(return {:n (tool/count_open)})")

    async def count_open():
        return 3

    agent = ptc.Agent("Count open orders", signature="{n :int}", tools={"count_open": count_open},
                      llm=llm)
    step = asyncio.run(client.adelegate(agent))
    assert step.value == {"n": 3}


def test_a_nested_agent_is_a_tool_of_its_parent(client):
    llm = Script(
        clojure('(return {:summary (:line (tool/summarise {:text "long text"}))})'),
        clojure('(return {:line (str "short: " data/text)})'),
    )
    child = ptc.Agent("Summarise {{text}}", name="summarise", description="One-line summary",
                      signature="(text :string) -> {line :string}")
    parent = ptc.Agent("Summarise the report", signature="{summary :string}", agents=[child],
                       llm=llm)
    step = client.delegate(parent)
    assert step.raise_for_fail().value == {"summary": "short: long text"}
    assert [r["agent"] for r in llm.requests] == ["main", "main/summarise"]


def test_running_out_of_turns_is_max_turns_exceeded(client):
    llm = Script(*[clojure("(+ 1 2)")] * 2)
    agent = ptc.Agent("Never returns", signature="{n :int}", llm=llm, max_turns=2)
    with pytest.raises(ptc.MaxTurnsExceeded):
        client.delegate(agent).raise_for_fail()


def test_a_raising_llm_is_llm_error_with_its_message(client):
    def llm(request):
        raise ConnectionRefusedError("model server down")

    step = client.delegate(ptc.Agent("Anything", llm=llm))
    assert step.fail.reason == "llm_error" and "model server down" in step.fail.message
    with pytest.raises(ptc.LlmError):
        step.raise_for_fail()


def test_a_retryable_llm_error_is_retried(client):
    calls = []

    def llm(request):
        calls.append(request)
        if len(calls) == 1:
            raise ptc.RetryableLlmError("rate limited")
        return clojure("(return 7)")

    step = client.delegate(ptc.Agent("Seven", signature=":int", llm=llm))
    assert step.raise_for_fail().value == 7 and len(calls) == 2


def test_a_bad_answer_shape_is_llm_error(client):
    step = client.delegate(ptc.Agent("Anything", llm=lambda r: {"text": "no content key"}))
    assert step.fail.reason == "llm_error" and "content" in step.fail.message


def test_a_missing_placeholder_is_template_error(client):
    step = client.delegate(ptc.Agent("Look up {{user}}", llm=Script()), context={"other": 1})
    with pytest.raises(ptc.TemplateError):
        step.raise_for_fail()


def test_a_tool_named_return_is_reserved(client):
    agent = ptc.Agent("x", tools={"return": lambda: 1}, llm=Script())
    with pytest.raises(ptc.ReservedToolName):
        client.delegate(agent).raise_for_fail()


def test_the_turn_budget_covers_the_whole_tree(client):
    llm = Script(*[clojure("(+ 1 2)")] * 5)
    agent = ptc.Agent("Never returns", signature="{n :int}", llm=llm, max_turns=5, turn_budget=2)
    with pytest.raises(ptc.TurnBudgetExhausted):
        client.delegate(agent).raise_for_fail()


def test_the_token_budget_is_enforced(client):
    answer = {"content": clojure("(+ 1 2)"), "usage": {"input_tokens": 500, "output_tokens": 500}}
    agent = ptc.Agent("x", signature="{n :int}", llm=Script(*[answer] * 5), token_budget=600)
    with pytest.raises(ptc.TokenBudgetExhausted):
        client.delegate(agent).raise_for_fail()


def test_nesting_past_max_depth_is_refused(client):
    leaf = ptc.Agent("leaf", name="leaf", description="d", signature="{n :int}")
    mid = ptc.Agent("mid", name="mid", description="d", agents=[leaf], signature="{n :int}")
    llm = Script(clojure("(return (tool/mid {}))"), clojure("(return (tool/leaf {}))"),
                 clojure("(return {:n 1})"))
    agent = ptc.Agent("root", agents=[mid], llm=llm, max_depth=1, signature="{n :int}")
    step = client.delegate(agent)
    assert not step.ok
    assert "max_depth_exceeded" in (step.fail.system_reason + step.fail.message)


def test_a_mission_timeout(client):
    def slow_llm(request):
        import time
        time.sleep(0.3)
        return clojure("(+ 1 2)")

    agent = ptc.Agent("x", signature="{n :int}", llm=slow_llm, max_turns=10, mission_timeout_ms=500)
    with pytest.raises(ptc.MissionTimeout):
        client.delegate(agent).raise_for_fail()



def test_a_daemon_runs_missions_with_the_same_steps(daemon, client):
    remote = ptc.Client.connect(daemon.socket)

    def mission():
        llm = Script(clojure("(def n (tool/seven))\n(+ n 0)"), clojure("(return {:n memory/n})"))
        return ptc.Agent("Seven", signature="{n :int}", tools={"seven": lambda: 7}, llm=llm)

    via_daemon, embedded = remote.delegate(mission()), client.delegate(mission())
    assert via_daemon.raise_for_fail().value == embedded.value == {"n": 7}
    assert via_daemon.usage.turns == embedded.usage.turns == 2
    failing = remote.delegate(ptc.Agent("x", signature="{n :int}", max_turns=1,
                                        llm=Script(clojure("(+ 1 2)"))))
    with pytest.raises(ptc.MaxTurnsExceeded):
        failing.raise_for_fail()
