"""Tools as Python functions: keyword arguments, async, errors, signatures, results."""

import asyncio

import ptc_sandbox as ptc


def test_a_tool_gets_its_arguments_as_keywords(client):
    seen = []

    def orders(status, limit=10):
        seen.append((status, limit))
        return [{"total": 5}, {"total": 7}]

    step = client.run(
        '(->> (tool/orders {:status "open"}) (map :total) (reduce +))',
        tools={"orders": ptc.Tool(orders, signature="(status :string) -> [{total :int}]",
                                  description="Open orders")},
        signature="() -> :int",
    )
    assert step.value == 12 and seen == [("open", 10)]
    assert step.tool_calls[0]["name"] == "orders"
    assert step.tool_calls[0]["args"] == {"status": "open"}
    assert step.tool_calls[0]["result"] == [{"total": 5}, {"total": 7}]
    assert step.usage.tool_calls == 1


def test_plain_callables_and_no_argument_calls(client):
    step = client.run("[(tool/now) (tool/twice 21)]",
                      tools={"now": lambda: "12:00", "twice": lambda n: n * 2})
    assert step.value == ["12:00", 42]


def test_async_tools_under_run_and_arun(client):
    async def slow_double(n):
        await asyncio.sleep(0.01)
        return n * 2

    tools = {"double": slow_double}
    assert client.run("(tool/double {:n 21})", tools=tools).value == 42

    async def main():
        loop = asyncio.get_running_loop()
        seen_loops = []

        async def on_this_loop(n):
            seen_loops.append(asyncio.get_running_loop())
            return n + 1

        step = await client.arun("(tool/inc {:n 1})", tools={"inc": on_this_loop})
        return step.value, seen_loops == [loop]

    assert asyncio.run(main()) == (2, True)


def test_a_tool_error_can_be_caught_by_the_program(client):
    def flaky():
        raise RuntimeError("database down")

    step = client.run('(try (tool/flaky) (catch Exception e (str "caught: " (ex-message e))))',
                      tools={"flaky": flaky})
    assert step.ok and "database down" in step.value


def test_an_exception_without_a_message_is_named_by_its_type(client):
    def bad():
        raise ValueError()

    step = client.run("(tool/bad)", tools={"bad": bad})
    assert step.fail.reason == "tool_error" and "ValueError" in step.fail.message


def test_wrong_keywords_are_a_tool_error_naming_them(client):
    step = client.run("(tool/get {:id 1 :extra 2})", tools={"get": lambda id: id})
    assert step.fail.reason == "tool_error" and "extra" in step.fail.message


def test_a_result_that_does_not_convert_is_a_tool_error_naming_the_path(client):
    step = client.run("(tool/when)", tools={"when": lambda: {"at": [1, object()]}})
    assert step.fail.reason == "tool_error"
    assert "result of tool when['at'][1]" in step.fail.message
    assert "cannot convert object" in step.fail.message


def test_tool_signatures_are_checked(client):
    tools = {"square": ptc.Tool(lambda n: n * n, signature="(n :int) -> :int")}
    assert client.run("(tool/square {:n 4})", tools=tools).value == 16
    bad_args = client.run('(tool/square {:n "four"})', tools=tools)
    assert bad_args.fail.reason == "validation_error"
    bad_result = client.run(
        "(tool/square {:n 4})", tools={"square": ptc.Tool(lambda n: "sixteen", signature="(n :int) -> :int")})
    assert bad_result.fail.reason == "validation_error"


def test_tool_must_be_callable():
    try:
        ptc.Tool(42)  # type: ignore[arg-type]
    except TypeError as e:
        assert "callable" in str(e)
    else:
        raise AssertionError("Tool(42) accepted")
