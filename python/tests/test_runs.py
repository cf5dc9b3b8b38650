"""Runs through the embedded engine: values, context, signatures, prints, usage, memory."""

import ptc_sandbox as ptc


def test_a_run_returns_its_value_and_usage(client):
    step = client.run("(->> (range 10) (filter odd?) (map #(* % %)) (reduce +))")
    assert step.ok and step.fail is None
    assert step.value == 165
    assert step.usage.eval_steps > 0
    assert step.usage.duration_ms >= 0
    assert step.raise_for_fail() is step


def test_context_is_data_and_prints_are_kept(client):
    step = client.run(
        '(println "region" data/region) (count data/orders)',
        context={"region": "eu", "orders": [{"total": 5}, {"total": 7}]},
    )
    assert step.value == 2
    assert step.prints == ["region eu"]


def test_signature_checks_the_result(client):
    ok = client.run("(+ 1 2)", signature="() -> :int")
    assert ok.value == 3 and ok.signature == "() -> :int"
    bad = client.run('"three"', signature="() -> :int")
    assert not bad.ok and bad.fail.reason == "validation_error"


def test_to_dict_has_the_json_shape(client):
    d = client.run('(def x 1) (println "hi") [:a 1.5 nil]').to_dict()
    assert set(d) == {
        "return", "fail", "memory", "memory_delta", "history", "signature", "prints",
        "warnings", "tool_calls", "usage", "trace",
    }
    assert d["return"] == ["a", 1.5, None]
    assert d["memory"] == {"x": 1} and d["memory_delta"] == {"x": 1}
    assert d["usage"]["eval_steps"] > 0
    failed = client.run('(fail {:reason :not_found :message "no user 7"})').to_dict()
    assert failed["fail"]["reason"] == "not_found" and failed["fail"]["kind"] == "program"
    assert "system_reason" not in failed["fail"]


def test_memory_carries_over_exactly_including_keywords(client):
    first = client.run("(def status :open) (def limit 3) limit")
    assert dict(first.memory) == {"status": "open", "limit": 3}
    # The Step's memory goes back as it was: `status` is still the keyword :open.
    again = client.run("[(= memory/status :open) (inc memory/limit)]", memory=first.memory)
    assert again.value == [True, 4]
    # So does the Step itself; memory accumulates.
    more = client.run("(def extra 1) (+ memory/limit memory/extra)", memory=again)
    assert more.value == 4 and set(more.memory) == {"status", "limit", "extra"}
    # A plain dict is plain data: strings stay strings.
    edited = client.run("[(= memory/status :open) memory/status]", memory={**first.memory})
    assert edited.value == [False, "open"]


def test_a_failed_run_keeps_the_input_memory(client):
    first = client.run("(def n 1)")
    failed = client.run("(def n 2) (/ 1 0)", memory=first)
    assert not failed.ok and dict(failed.memory) == {"n": 1}


def test_memory_is_read_only(client):
    step = client.run("(def n 1)")
    assert step.memory["n"] == 1 and len(step.memory) == 1 and "n" in step.memory
    try:
        step.memory["n"] = 2  # type: ignore[index]
    except TypeError:
        pass
    else:
        raise AssertionError("Memory accepted an assignment")


def test_policy_and_limits_are_requests(client):
    assert client.run("(+ 1 2)", policy="strict").value == 3
    step = client.run("(+ 1 2)", policy="no-such-policy")
    assert step.fail.reason == "invalid_request" and "no-such-policy" in step.fail.message
    looser = client.run("(+ 1 2)", timeout_ms=10_000_000)
    assert looser.fail.reason == "invalid_request"


def test_program_must_be_a_string(client):
    try:
        client.run(b"(+ 1 2)")  # type: ignore[arg-type]
    except TypeError as e:
        assert "program must be a str" in str(e)
    else:
        raise AssertionError("bytes accepted as a program")


def test_version_is_exposed():
    assert ptc.__version__
