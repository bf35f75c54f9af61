"""An attribute over a stream as a column (``cepkit.runtime.attribute_columns``): how its values compare,
and values as dict keys."""

import math

from cepkit.runtime.attribute_columns import AttributeColumn as Column, hashable_key


def test_columns_classify_how_their_values_compare():
    assert Column.of_values([1, 2.5, None]).kind == "num"
    assert Column.of_values([1, 10**400]).kind == "other"  # float64 would overflow or round
    assert Column.of_values([2**53 + 1]).kind == "other" and Column.of_values([2**53]).kind == "num"
    assert Column.of_values(["x", None]).kind == "str" and Column.of_values([True]).kind == "bool"
    assert Column.of_values([1, "x"]).kind == "other" and Column.of_values([[1], None]).kind == "other"
    assert Column.of_values([None, math.nan]).null.all()
    assert hashable_key([1, {"a": [2]}]) == hashable_key([1, {"a": [2]}]) != hashable_key((1, {"a": [2]}))
