"""Python <-> ptc data: both ways, the edges, and errors that name the path."""

import math

import pytest

import ptc_sandbox as ptc


def echo(client, value):
    """`value` through a run's context and back."""
    step = client.run("data/v", context={"v": value})
    return step.raise_for_fail().value


@pytest.mark.parametrize("value", [
    None, True, False, 0, -1, 2**63 - 1, -(2**63), 1.5, -0.0, "", "héllo ✓ 日本",
    [], [1, [2, [3]]], {}, {"a": {"b": [1, None, "x"]}}, {1: "int key", "s": 2},
])
def test_plain_data_round_trips(client, value):
    got = echo(client, value)
    assert got == value and type(got) is type(value)


def test_bool_stays_bool_and_int_stays_int(client):
    assert echo(client, [True, 1, 1.0]) == [True, 1, 1.0]
    assert [type(x) for x in echo(client, [True, 1, 1.0])] == [bool, int, float]


def test_tuples_become_lists_and_sets_stay_sets(client):
    assert echo(client, (1, 2)) == [1, 2]
    assert echo(client, {1, 2}) == {1, 2}
    assert echo(client, frozenset({"a"})) == {"a"}


def test_non_finite_floats_survive(client):
    got = echo(client, [math.inf, -math.inf, math.nan])
    assert got[0] == math.inf and got[1] == -math.inf and math.isnan(got[2])


def test_keywords_come_back_as_strings(client):
    step = client.run("{:status :open :tags [:a :b] :n/x 1}")
    assert step.value == {"status": "open", "tags": ["a", "b"], "n/x": 1}


def test_collection_keys_become_hashable(client):
    step = client.run("{[1 2] :pair #{3} :set {:k 1} :map}")
    assert step.value == {(1, 2): "pair", frozenset({3}): "set", "{:k 1}": "map"}
    assert client.run("#{[1 2]}").value == {(1, 2)}


def test_lists_and_lazy_seqs_become_lists(client):
    assert client.run("(map inc '(1 2 3))").value == [2, 3, 4]


@pytest.mark.parametrize("value,path,what", [
    ({"when": object()}, "context['when']", "cannot convert object"),
    ({"xs": [1, 2, b"raw"]}, "context['xs'][2]", "cannot convert bytes"),
    ({"n": 2**63}, "context['n']", "64-bit"),
    ({"n": -(2**63) - 1}, "context['n']", "64-bit"),
    ({"f": print}, "context['f']", "builtin_function_or_method"),
    ({(1, object()): 1}, "context[(1, <object", "cannot convert object"),
])
def test_unconvertible_data_raises_naming_the_path(client, value, path, what):
    with pytest.raises(ptc.ConversionError) as info:
        client.run("1", context=value)
    assert isinstance(info.value, TypeError)
    assert info.value.path.startswith(path) and what in str(info.value), str(info.value)


def test_nesting_is_bounded_and_cycles_are_caught(client):
    deep = []
    for _ in range(600):
        deep = [deep]
    with pytest.raises(ptc.ConversionError, match="nested deeper"):
        client.run("1", context={"d": deep})
    cycle = []
    cycle.append(cycle)
    with pytest.raises(ptc.ConversionError, match="nested deeper"):
        client.run("1", context={"c": cycle})
    # 500 levels are fine.
    ok = []
    for _ in range(500):
        ok = [ok]
    assert client.run("(count data/d)", context={"d": ok}).value == 1


def test_memory_that_does_not_convert_names_memory(client):
    with pytest.raises(ptc.ConversionError) as info:
        client.run("1", memory={"x": {1, object()}})
    assert info.value.path.startswith("memory['x'][")


def test_a_context_must_be_a_mapping(client):
    for bad in ([1, 2], "x", 3):
        with pytest.raises(ptc.ConversionError, match="must be a dict") as info:
            client.run("1", context=bad)  # type: ignore[arg-type]
        assert info.value.path == "context"
    with pytest.raises(ptc.ConversionError, match="must be a dict"):
        client.delegate(ptc.Agent("x", llm=lambda r: "```clojure\n(return 1)\n```"), context=[1])


def test_dict_subclasses_convert(client):
    from collections import OrderedDict
    assert echo(client, OrderedDict(a=1)) == {"a": 1}
