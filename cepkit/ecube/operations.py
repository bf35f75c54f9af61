"""The E-Cube OLAP operations on queries ([LIU] §4.2, Ex 9).

Positions are 1-based, as in the text: ``pattern_drill_down(q3, [("!D", 2)])`` puts ``!D`` second;
``pattern_roll_up(q6, [("G", 1), ("A", 2)])`` removes the items at positions 1 and 2 of q6 (checking
they are G and A); the concept operations replace the concept at a position by one below
(``concept_drill_down(q1, [("TX", "D", 1), ("OK", "T", 2)])``) or above it (roll-up). With an
attribute hierarchy, a concept written as a condition on the item's variable (``x.loc = 'TX'``) is
replaced the same way.

>>> import cepkit
>>> h = cepkit.Hierarchy({"TX": ["D", "A", "G"], "OK": ["T"]})
>>> str(pattern_drill_down(cepkit.parse("SEQ(G, A, T)", h), [("!D", 2)]))
'SEQ(G, !D, A, T)'
>>> str(concept_drill_down(cepkit.parse("SEQ(TX, OK)", h), [("TX", "D", 1), ("OK", "T", 2)]))
'D ; T'
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import QueryError
from ..lang import ast as A
from ..lang.hierarchy import concept_comparison
from ..lang.parser import parse_tree
from ..lang.printer import pretty
from ..lang.query import Query, parse
from .shape import strip_filters


def _parts(query: Query) -> tuple:
    """(items, conditions) of a flat SEQ: its atoms and negated atoms, and every condition on it."""
    pattern, conditions = strip_filters(query.ast.pattern)
    conditions.extend(A.conjuncts(query.where))
    nodes = pattern.items if isinstance(pattern, A.Seq) else (pattern,)
    items = []
    for node in nodes:
        if isinstance(node, A.Expr):
            conditions.extend(A.conjuncts(node))
        elif isinstance(node, (A.Atom, A.Not)) and isinstance(node.item if isinstance(node, A.Not) else node, A.Atom):
            items.append(node)
        else:
            raise QueryError.at(node, "E-Cube operations take a flat SEQ of atoms and negated atoms", query.text)
    return items, conditions


def _rebuild(query: Query, items, conditions) -> Query:
    ast = replace(query.ast, pattern=A.Seq(tuple(items)), where=A.conjoin(conditions), core_style=False, source=None)
    return parse(pretty(ast), query.hierarchy)


def _atom(node) -> A.Atom:
    return node.item if isinstance(node, A.Not) else node


def _index(items, position: int, query: Query, size=None) -> int:
    size = len(items) if size is None else size
    if not 1 <= position <= size:
        raise QueryError(f"position {position} is outside 1..{size} in {query}")
    return position - 1


def pattern_drill_down(query: Query, items) -> Query:
    """Insert items (``"!D"``, ``"D d"``...) so that each stands at its 1-based position."""
    current, conditions = _parts(query)
    for text, position in items:
        (node,) = parse_tree(f"SEQ({text})").pattern.items
        current.insert(_index(current, position, query, len(current) + 1), node)
    return _rebuild(query, current, conditions)


def pattern_roll_up(query: Query, items) -> Query:
    """Remove the items at the given 1-based positions of ``query`` (each checked against its text);
    conditions that mention a removed variable go with it."""
    current, conditions = _parts(query)
    removed = set()
    for text, position in items:
        (node,) = parse_tree(f"SEQ({text})").pattern.items
        k = _index(current, position, query)
        here = current[k]
        if (isinstance(here, A.Not), _atom(here).type) != (isinstance(node, A.Not), _atom(node).type):
            raise QueryError(f"position {position} of {query} holds {pretty(here)}, not {text}")
        removed.add(k)
    gone = {_atom(current[k]).var for k in removed} - {None}
    kept = [c for c in conditions if not set(A.variables_in(c)) & gone]
    return _rebuild(query, [n for k, n in enumerate(current) if k not in removed], kept)


def _replace_concept(query: Query, steps, finer: bool) -> Query:
    hierarchy = query.hierarchy
    if hierarchy is None:
        raise QueryError(f"concept operations need a hierarchy; {query} has none")
    current, conditions = _parts(query)
    for old, new, position in steps:
        below, above = (new, old) if finer else (old, new)
        if below not in hierarchy.covers(above) or below == above:
            raise QueryError(f"{below!r} is not below {above!r} in the hierarchy")
        k = _index(current, position, query)
        atom = _atom(current[k])
        if hierarchy.attribute is None:
            if atom.type != old:
                raise QueryError(f"position {position} of {query} has type {atom.type}, not {old}")
            node = replace(atom, type=new)
            current[k] = A.Not(node) if isinstance(current[k], A.Not) else node
            continue
        hits = [
            i
            for i, c in enumerate(conditions)
            if (found := concept_comparison(c, hierarchy, leaves=True)) is not None
            and found[0].var == atom.var
            and found[1] == (old,)
            and not found[2]
        ]
        if not hits:
            raise QueryError(
                f"no condition {atom.var}.{hierarchy.attribute} = {old!r} at position {position} of {query}"
            )
        conditions[hits[0]] = A.Compare("=", A.Attr(atom.var, hierarchy.attribute), A.Literal(new))
    return _rebuild(query, current, conditions)


def concept_drill_down(query: Query, steps) -> Query:
    """Replace concepts by finer ones: ``steps`` are (concept, finer concept, 1-based position)."""
    return _replace_concept(query, steps, finer=True)


def concept_roll_up(query: Query, steps) -> Query:
    """Replace concepts by coarser ones: ``steps`` are (concept, coarser concept, 1-based position)."""
    return _replace_concept(query, steps, finer=False)
