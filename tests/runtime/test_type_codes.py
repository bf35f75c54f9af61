"""A stream's type column as int32 codes (``cepkit.runtime.type_codes``): the codes and names of
pd.factorize for every form of column, in slices or not, by address or by value; a bad type named at its
position."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cepkit
from cepkit import EventError
from cepkit.runtime.stream import Stream
from cepkit.runtime.type_codes import factorized_types


NULLS = (None, float("nan"), np.nan, pd.NA, pd.NaT)


@st.composite
def type_columns(draw):
    """A type column's values: a few names, each row the name's one object or a fresh equal string (a
    distinct object), some rows null of every kind; a step to read it strided or reversed."""
    names = draw(
        st.lists(st.sampled_from(["A", "B", "type_c", "Δ", "", "long name " * 3]), min_size=1, max_size=5, unique=True)
    )
    rows = []
    for _ in range(draw(st.integers(0, 40))):
        k = draw(st.integers(-1, len(names) - 1))
        if k < 0:
            rows.append(draw(st.sampled_from(NULLS)))
        else:
            rows.append("".join(list(names[k])) if draw(st.booleans()) else names[k])
    return rows, draw(st.sampled_from([1, 2, -1]))


def _object_array(rows: list) -> np.ndarray:
    out = np.empty(len(rows), dtype=object)
    out[:] = rows
    return out


@settings(max_examples=150, deadline=None)
@given(type_columns(), st.sampled_from([1 << 20, 7]), st.sampled_from([4096, 1]))
def test_type_columns_factorize_as_pd_factorize(column, rows_at_once, few_objects):
    """The type column's codes and names are pd.factorize's (first appearance, equal strings one code,
    -1 for every kind of null) for object columns, strided or not, by address or by value, in slices or
    not, and for categorical, Python string and Arrow string columns; a null is named at its position."""
    rows, step = column
    values = _object_array(rows + rows)[::step]
    expected_codes, expected_names = pd.factorize(values)
    first_null = next((i for i, v in enumerate(values.tolist()) if not isinstance(v, str)), None)
    forms = [
        values,
        pd.Categorical(values),
        pd.array(values, dtype="string"),
        pd.array(values, dtype="string[pyarrow]"),
    ]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cepkit.runtime.type_codes, "FACTORIZE_ROWS", rows_at_once)
        patch.setattr(cepkit.runtime.type_codes, "FEW_OBJECTS", few_objects)
        for form in forms:
            codes, names = (
                factorized_types(form) if not isinstance(form, pd.Categorical) else (form.codes, list(form.categories))
            )
            if isinstance(form, pd.Categorical):  # categories are sorted: compare the names per row
                assert [names[c] if c >= 0 else None for c in codes] == [
                    expected_names[c] if c >= 0 else None for c in expected_codes
                ]
            else:
                assert codes.dtype == np.int32 and codes.tolist() == expected_codes.tolist(), type(form)
                assert names == list(expected_names) and all(type(n) is str for n in names)
            frame = pd.DataFrame({"type": form})
            if first_null is None:
                assert list(Stream.from_any(frame).types) == values.tolist()
            else:
                with pytest.raises(EventError) as err:
                    Stream.from_any(frame)
                assert (err.value.position, err.value.field) == (first_null, "type")


def test_a_type_that_is_not_a_string_is_named_at_its_position_by_address():
    """Unhashable or numeric types in an object column: an EventError at the first one, not a TypeError."""
    for bad in ([1], 3, 2.5, b"A", {"type": "A"}):
        with pytest.raises(EventError) as err:
            Stream.from_any(pd.DataFrame({"type": _object_array(["A", "B", bad, "A", bad])}))
        assert (err.value.position, err.value.field) == (2, "type") and repr(bad) in str(err.value)
