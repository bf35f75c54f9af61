"""The shared condition compiler (cepkit.lang.compiled): the value rules of docs/language.md §10, the same as
the reference evaluator's, over a binding shape given by an accessor."""

import pytest

import cepkit
from cepkit.lang import ast as A
from cepkit.lang.compiled import blame, compile_condition, compile_value
from cepkit.lang.parser import parse_tree
from cepkit.runtime.event_record import Event
from cepkit.semantics.conditions import holds


def access(node):
    """Binding: a dict var -> Event; ``prev(x.v)`` reads the event bound to ``x_prev``."""
    if isinstance(node, A.Prev):
        var, attr = node.arg.var + "_prev", node.arg.attr
    elif isinstance(node, A.Attr):
        var, attr = node.var, node.attr
    else:
        raise TypeError(f"no {type(node).__name__} here")
    return (lambda b: b[var].get(attr)), (lambda b: b[var].position if var in b else None)


def where(text: str) -> A.Expr:
    return parse_tree(f"SEQ(A a, B b) WHERE {text}").where


def binding(a: dict, b: dict) -> dict:
    return {"a": Event("A", 3, a, position=3), "b": Event("B", 7, b, position=7)}


CASES = [  # condition, a's attributes, b's attributes, truth
    ("a.v + 1 < b.v", {"v": 1}, {"v": 3}, True),
    ("a.v + 1 < b.v", {}, {"v": 3}, False),  # null in arithmetic: null, compared: false
    ("not (a.v + 1 < b.v)", {}, {"v": 3}, True),  # not of a false comparison
    ("a.v != b.v", {"v": None}, {"v": 3}, False),  # != with null is false too
    ("a.v / b.v = 0", {"v": 1}, {"v": 0}, False),  # division by zero is null
    ("not (a.v / b.v = 0)", {"v": 1}, {"v": 0}, True),
    ("a.v / b.v = 0.5", {"v": 1}, {"v": 2}, True),
    ("-a.v < 0", {"v": 2}, {}, True),
    ("-a.v < 0", {}, {}, False),
    ("a.v IN (1, 2, b.v)", {"v": 5}, {"v": 5}, True),
    ("a.v IN (1, 2, b.v)", {"v": 5}, {"v": 6}, False),
    ("a.v IN (1, null)", {}, {}, False),  # null IN (...) is false, even with a null option
    ("not (a.v IN (1, null))", {}, {}, True),
    ("a.f", {"f": 0}, {}, False),  # bare values: truthy and not null
    ("a.f", {"f": "x"}, {}, True),
    ("a.f", {}, {}, False),
    ("a.v = 1 and (b.v = 2 or b.v = 3)", {"v": 1}, {"v": 3}, True),
    ("a.v = 1 and b.v = 2 and a.w = 4", {"v": 1, "w": 4}, {"v": 2}, True),
    ("a.v = 2 or b.v = 2 or a.w = 4", {"v": 1, "w": 5}, {"v": 1}, False),
    ("(a.v < b.v) = true", {"v": 1}, {"v": 2}, True),  # a condition used as a value
    ("a.s = 3", {"s": "x"}, {}, False),  # equality across kinds: no error
    ("a.d < 2 min", {"d": 100}, {}, True),  # durations are seconds
]


@pytest.mark.parametrize("text, a, b, expected", CASES)
def test_value_rules_agree_with_the_reference(text, a, b, expected):
    cond, bound = where(text), binding(a, b)
    assert compile_condition(cond, access)(bound) is expected
    assert holds(cond, {"a": 0, "b": 1}, [bound["a"], bound["b"]]) is expected


def test_values():
    bound = binding({"v": 6}, {"v": 4})
    assert compile_value(where("a.v * 2 - b.v / 4 = 0").left, access)(bound) == 11
    assert compile_value(where("a.v / 0 = 0").left, access)(bound) is None
    assert compile_value(where("a.w - 1 = 0").left, access)(bound) is None
    assert compile_value(where("prev(a.v) = 0").left, access)({"a_prev": Event("A", 1, {"v": 9})}) == 9


@pytest.mark.parametrize(
    "text, a, b, position, field, message",
    [
        ("a.v < b.v", {"v": "x"}, {"v": 1}, 3, "v", "cannot compare 'x' (str) < 1 (int)"),
        ("b.w >= a.v", {"v": "x"}, {"w": 1}, 7, "w", "cannot compare 1 (int) >= 'x' (str)"),
        ("a.v + b.w > 0", {"v": 1}, {"w": "x"}, 7, "w", "expected a number, got 'x' (str)"),  # the operand
        ("a.v * b.w > 0", {"v": "x"}, {"w": 2}, 3, "v", "expected a number, got 'x' (str)"),
        ("-a.s < 0", {"s": "x"}, {}, 3, "s", "expected a number, got 'x' (str)"),
        ("a.v - 'x' > 0", {"v": 1}, {}, -1, "?", "expected a number, got 'x' (str)"),  # a literal
        ("'x' < 1", {}, {}, -1, "?", "cannot compare 'x' (str) < 1 (int)"),
    ],
)
def test_errors_name_position_and_field_as_the_reference(text, a, b, position, field, message):
    cond, bound = where(text), binding(a, b)
    for evaluate in (
        lambda: compile_condition(cond, access)(bound),
        lambda: holds(cond, {"a": 0, "b": 1}, [bound["a"], bound["b"]]),
    ):
        with pytest.raises(cepkit.EventError) as err:
            evaluate()
        assert (err.value.position, err.value.field) == (position, field)
        assert message in str(err.value)


def test_blame_skips_variables_the_binding_does_not_bind():
    assert blame(where("c.v < b.v"), access)({"b": Event("B", 7, {}, position=7)}) == (7, "v")
    assert blame(where("c.v < 1"), access)({}) == (-1, "?")


def test_the_accessor_refuses_what_its_engine_lacks():
    with pytest.raises(TypeError, match="no Agg here"):
        compile_condition(parse_tree("SEQ(A+ a, B b) WHERE count(a) > 1").where, access)


def test_every_engine_blames_the_offending_operand():
    """The stack, ses and rcep wrappers all use this compiler: arithmetic on a non-number names the
    operand's event and attribute, as the reference does."""
    from cepkit.engines.rcep.keys import key_function
    from cepkit.engines.ses.conditions import Conjunct
    from cepkit.engines.stack.conditions import compile_condition as stack_condition

    cond = where("a.v + b.w > 0")
    a, b = Event("A", 3, {"v": 1}, position=3), Event("B", 7, {"w": "x"}, position=7)
    evaluations = [
        lambda: stack_condition(cond)({"a": a, "b": b}),
        lambda: Conjunct(cond, {"a": 0, "b": 1}, frozenset()).holds(((a,), (b,))),
        lambda: holds(cond, {"a": 0, "b": 1}, [a, b]),
    ]
    for evaluate in evaluations:
        with pytest.raises(cepkit.EventError) as err:
            evaluate()
        assert (err.value.position, err.value.field) == (7, "w")
    with pytest.raises(cepkit.EventError) as err:
        key_function(where("b.v - b.w > 0").left)(Event("B", 7, {"v": 1, "w": "x"}, position=7))
    assert (err.value.position, err.value.field) == (7, "w")
