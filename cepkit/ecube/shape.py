"""One query as E-Cube sees it ([LIU] §4.2): a flat SEQ of typed items, positive or negated, each
item standing for a *set* of event types (a concept and everything below it) and, with an attribute
hierarchy, a set of attribute values; plus the conditions, the window and the partition.

A ``Shape`` turns back into a query the stack engine runs (``Shape.query``): every concept becomes the
flat set of types it covers, every attribute concept an ``IN`` list (docs/language.md §7). The reuse
strategies build their helper queries (the s→g deltas, the intermediate of a two-step edge) as shapes
whose items hold arbitrary type sets, such as "TX but not Dallas".
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from typing import Optional

import numpy as np

from ..errors import QueryError
from ..lang import ast as A
from ..lang.hierarchy import Hierarchy, concept_comparison, expand_attribute_concepts
from ..lang.printer import pretty
from ..lang.query import Query, parse
from ..runtime.match_arrays import MatchArrays

FRAGMENT = "E-Cube evaluates flat SEQ queries of typed atoms and negated atoms ([LIU] ch. 3-4), under strategy ALL"


@dataclass(frozen=True)
class Item:
    """A positive or negated atom: the types and attribute values it accepts.

    ``values`` is None when any value is accepted; ``excluded`` lists values it must not have (only the
    complements built by the specific-to-general deltas use it)."""

    positive: bool
    var: Optional[str]
    label: str  # the concept as written (for plans and widgets)
    types: frozenset
    values: Optional[frozenset] = None
    excluded: frozenset = frozenset()
    concept: Optional[str] = field(default=None, compare=False)  # the type as written
    value_concepts: tuple = field(default=(), compare=False)  # attribute concepts as written

    def covers(self, other: "Item") -> bool:
        """Every event ``other`` accepts, this item accepts too (Def 2: an instance belongs to every
        ancestor of its type)."""
        if not self.types >= other.types or self.excluded - other.excluded:
            return False
        if self.values is None:
            return True
        return other.values is not None and self.values >= other.values

    def accepts(self, event, attribute: Optional[str]) -> bool:
        if event.type not in self.types:
            return False
        if attribute is None or (self.values is None and not self.excluded):
            return True
        value = event.get(attribute)
        return (self.values is None or value in self.values) and value not in self.excluded

    def same_as(self, other: "Item") -> bool:
        return (self.positive, self.types, self.values, self.excluded) == (
            other.positive,
            other.types,
            other.values,
            other.excluded,
        )

    @cached_property
    def _hash(self) -> int:
        return hash((self.positive, self.var, self.label, self.types, self.values, self.excluded))

    def __hash__(self):  # cached: the cost model and the planner's caches look items up many times
        return self._hash

    def __getstate__(self):  # a str's hash differs between processes: never pickle the cached one
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    def __str__(self):
        return ("" if self.positive else "!") + self.label


@dataclass(frozen=True)
class Shape:
    """A query in the E-Cube fragment. ``conditions`` are the conjuncts other than attribute concepts,
    with attribute concepts of ``!=`` already spelled out."""

    items: tuple
    conditions: tuple = ()
    within: Optional[A.Window] = None
    partition_by: tuple = ()
    attribute: Optional[str] = None
    source: Optional[Query] = field(default=None, compare=False, repr=False)

    @cached_property
    def positives(self) -> tuple:
        """Indices of the positive items: a match is one position per positive item, in this order."""
        return tuple(k for k, item in enumerate(self.items) if item.positive)

    @cached_property
    def query(self) -> Query:
        """The shape as a query the stack engine runs: the query it came from when that has no attribute
        concepts (the stack engine reads type hierarchies) and no LIMIT, or its concepts flattened into type
        sets and ``IN`` lists (an attribute hierarchy, a helper shape the strategies built)."""
        if self.source is not None and self.attribute is None and self.source.ast.limit is None:
            return self.source  # (with a LIMIT, the rows a strategy reuses must all be there)
        flat, atoms, extra = {}, [], []
        for item in self.items:
            if len(item.types) == 1:
                (name,) = item.types
            else:
                name = flat.setdefault(item.types, f"_ecube_{len(flat)}")
            atom = A.Atom(name, item.var)
            atoms.append(atom if item.positive else A.Not(atom))
            if item.var is not None and self.attribute is not None:
                attr = A.Attr(item.var, self.attribute)
                if item.values is not None:
                    extra.append(A.In(attr, tuple(A.Literal(v) for v in _sorted(item.values))))
                if item.excluded:
                    extra.append(A.BoolNot(A.In(attr, tuple(A.Literal(v) for v in _sorted(item.excluded)))))
        ast = A.QueryNode(
            pattern=A.Seq(tuple(atoms)),
            where=A.conjoin(self.conditions + tuple(extra)),
            within=self.within,
            partition_by=self.partition_by,
        )
        return _parsed(pretty(ast), tuple((name, tuple(sorted(types))) for types, name in flat.items()))

    @cached_property
    def _hash(self) -> int:
        return hash((self.items, self.conditions, self.within, self.partition_by, self.attribute))

    def __hash__(self):  # cached: shapes key the planner's caches
        return self._hash

    __getstate__ = Item.__getstate__

    @cached_property
    def _names(self) -> tuple:
        return tuple(self.items[k].var for k in self.positives)

    def arrays_of(self, rows: np.ndarray) -> MatchArrays:
        """The matches of ``rows`` (an (n, k) array, one increasing position per positive item: a flat SEQ
        in order, each distinct, in output order: ``in_output_order``) as columns, bindings named as in the
        query; no ``Match`` object is made."""
        n, width = rows.shape
        ordered = {"sorted_within_last": True, "groups_in_order": True}  # and distinct: one row per match
        named = [c for c, var in enumerate(self._names) if var is not None]
        names = [self._names[c] for c in named]
        offsets = np.arange(n + 1, dtype=np.int64) * width
        flat = rows.reshape(-1)
        if len(named) == width:
            return MatchArrays(
                offsets, flat, offsets, flat, None, names, [False] * width, row_variables=np.arange(width), **ordered
            )
        return MatchArrays(
            offsets,
            flat,
            np.arange(n + 1, dtype=np.int64) * len(named),
            rows[:, named].reshape(-1),
            np.tile(np.arange(len(named)), n),
            names,
            [False] * len(named),
            **ordered,
        )

    def with_items(self, items, conditions=None) -> "Shape":
        return replace(
            self,
            items=tuple(items),
            conditions=self.conditions if conditions is None else tuple(conditions),
            source=None,
        )

    def __str__(self):
        return "SEQ(" + ", ".join(str(i) for i in self.items) + ")"


@lru_cache(maxsize=1024)
def _parsed(text: str, concepts: tuple) -> Query:
    """A helper query parsed once per process (planning a cube parses its delta queries: ~5 ms each), under
    the flat hierarchy of its ``concepts`` ((name, types) pairs)."""
    return parse(text, Hierarchy({name: list(types) for name, types in concepts}) if concepts else None)


def in_output_order(rows: np.ndarray) -> np.ndarray:
    """``rows`` in output order (docs/language.md §10.2): by last position, then positions."""
    order = output_order(rows)
    return rows if order is None else rows[order]


def output_order(rows: np.ndarray, lead=None) -> Optional[np.ndarray]:
    """The order that sorts the (n, k) rows by column ``lead`` (the last by default), then every column in
    order; None when they are sorted already. One int64 key per row (the columns packed, re-ranked when
    they would overflow), checked, then argsorted."""
    if len(rows) < 2:
        return None
    width = rows.shape[1]
    lead = width - 1 if lead is None else lead
    keys = np.zeros(len(rows), np.int64)
    for c in [lead, *(c for c in range(width) if c != lead)]:
        column = rows[:, c]
        base = int(column.max()) + 1
        if int(keys.max()) >= (2**62) // base:
            keys = np.unique(keys, return_inverse=True)[1].reshape(-1).astype(np.int64)  # ranks keep the order
        keys = keys * base + column
    if (keys[1:] >= keys[:-1]).all():
        return None
    return np.argsort(keys, kind="stable")


def _sorted(values) -> list:
    return sorted(values, key=lambda v: (str(type(v)), v))


def shape_of(query: Query, refuse=None) -> Shape:
    """The E-Cube shape of a parsed query; outside the fragment, the error ``refuse(node, what)`` builds
    (by default a ``QueryError`` with a caret; the ``ecube`` engine passes ``Engine.unsupported``)."""

    def fail(node, what):
        return refuse(node, what) if refuse is not None else QueryError.at(node, f"{FRAGMENT}: {what}", query.text)

    hierarchy = query.hierarchy
    if query.strategy != "ALL":
        raise fail(query.ast, f"the {query.strategy} strategy")
    for what, present in (
        ("CONSUME BY", query.consume not in (None, "NONE")),
        ("RETURN / SELECT of variables", query.select is not None),
    ):
        if present:
            raise fail(query.ast, what)
    pattern, conjuncts = strip_filters(query.scoped)
    nodes = pattern.items if isinstance(pattern, A.Seq) else (pattern,)
    atoms = []
    for node in nodes:
        node, conds = strip_filters(node)
        conjuncts.extend(conds)
        positive = not isinstance(node, A.Not)
        if not positive:
            node, conds = strip_filters(node.item)
            conjuncts.extend(conds)
        if not isinstance(node, A.Atom):
            raise fail(node, f"{type(node).__name__} items (a flat SEQ of atoms and negated atoms only)")
        if node.type is None:
            raise fail(node, "ANY (an item stands for a concept of the hierarchy)")
        atoms.append((positive, node))
    if not any(positive for positive, _ in atoms):
        raise fail(pattern, "a SEQ without positive items")

    values, labels, conditions = {}, {}, []
    for conj in conjuncts:
        found = concept_comparison(conj, hierarchy, leaves=True)  # a leaf is the finest concept
        if found is not None and not found[2] and found[0].index is None:
            var = found[0].var
            covered = frozenset().union(*(hierarchy.covers(c) for c in found[1]))
            values[var] = values.get(var, covered) & covered
            labels.setdefault(var, []).append(found[1])
        else:
            conditions.append(expand_attribute_concepts(conj, hierarchy))
    type_hierarchy = hierarchy if hierarchy is not None and hierarchy.attribute is None else None
    items = []
    for positive, atom in atoms:
        types = type_hierarchy.covers(atom.type) if type_hierarchy is not None else frozenset({atom.type})
        written = tuple(c for concepts in labels.get(atom.var, ()) for c in concepts)
        label = atom.type + "".join(
            f"[{hierarchy.attribute}={'|'.join(map(str, concepts))}]" for concepts in labels.get(atom.var, ())
        )
        items.append(
            Item(positive, atom.var, label, types, values.get(atom.var), concept=atom.type, value_concepts=written)
        )
    attribute = hierarchy.attribute if hierarchy is not None else None
    return Shape(tuple(items), tuple(conditions), query.within, tuple(query.partition_by), attribute, query)


def strip_filters(node) -> tuple:
    """A node without its FILTERs, and their conjuncts (in a flat SEQ every filter is on the match)."""
    conds = []
    while isinstance(node, A.Filter):
        conds.extend(A.conjuncts(node.cond))
        node = node.pattern
    return node, conds


def rename(expr: A.Expr, mapping: dict) -> A.Expr:
    """``expr`` with its variables renamed (``mapping``: old -> new)."""

    def fn(node):
        if isinstance(node, (A.Attr, A.Agg)) and node.var in mapping:
            return replace(node, var=mapping[node.var])
        return node

    return expr.transform(fn)


def condition_texts(conditions) -> frozenset:
    """Conditions compared by their printed form (spans and object identity play no part)."""
    return frozenset(pretty(c) for c in conditions)
