"""The E-Cube lattice: concept and pattern refinement between queries ([LIU] §4.2, Defs 3 and 4).

``refinement(general, specific)`` says how ``general`` refines into ``specific``:

- **concept** (Def 3, ``general >c specific``): same length, items aligned; every positive item of the
  general query covers the aligned one (equal or an ancestor), every negated item of the *specific*
  query covers the aligned one (a coarser negation is stricter), at least one differs;
- **pattern** (Def 4, ``general >p specific``): the general query's items, type and polarity, are an
  order-preserving proper subsequence of the specific one's;
- **both**: a proper subsequence whose aligned items refine by concept (q1 and q3 of Fig 4.1).

Both queries must share window and partition, and the general query's conditions must be the specific
one's (renamed along the alignment) minus those that mention the items the specific query adds: the
[LIU] ch. 4 assumes the same window and predicates in every query (§4.7).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Iterator, Optional

import networkx as nx

from ..lang.ast import variables_in
from .shape import Shape, condition_texts, rename


@dataclass(frozen=True)
class Refinement:
    """How a general query refines into a specific one: ``kind`` and the ``embedding`` (general item
    index -> specific item index)."""

    kind: str
    embedding: tuple

    def renaming(self, general: Shape, specific: Shape) -> dict:
        """General variable -> the aligned specific variable."""
        return {
            general.items[g].var: specific.items[s].var
            for g, s in enumerate(self.embedding)
            if general.items[g].var is not None
        }

    def added(self, specific: Shape) -> tuple:
        """Indices of the specific query's items that the general one lacks."""
        return tuple(k for k in range(len(specific.items)) if k not in self.embedding)


def _embeddings(general: Shape, specific: Shape, g: int = 0, s: int = 0) -> Iterator[tuple]:
    """Order-preserving alignments of the general items into the specific ones, item by item."""
    if g == len(general.items):
        yield ()
        return
    mine = general.items[g]
    for k in range(s, len(specific.items) - (len(general.items) - g) + 1):
        theirs = specific.items[k]
        if mine.positive != theirs.positive:
            continue
        if (mine.positive and mine.covers(theirs)) or (not mine.positive and theirs.covers(mine)):
            for rest in _embeddings(general, specific, g + 1, k + 1):
                yield (k,) + rest


@lru_cache(maxsize=4096)
def refinement(general: Shape, specific: Shape) -> Optional[Refinement]:
    """The refinement from ``general`` to ``specific``, or None when the lattice has no such edge (decided
    once per process and pair: a fresh cube over the same queries builds its lattice from these).

    >>> import cepkit
    >>> from cepkit.ecube.shape import shape_of
    >>> h = cepkit.Hierarchy({"TX": ["D", "A", "G"], "OK": ["T"]})
    >>> q1, q3 = (shape_of(cepkit.parse(t, h)) for t in ("SEQ(TX x, OK y)", "SEQ(G g, A a, T t)"))
    >>> refinement(q1, q3)
    Refinement(kind='both', embedding=(0, 2))
    """
    if (general.within, general.partition_by, general.attribute) != (
        specific.within,
        specific.partition_by,
        specific.attribute,
    ):
        return None
    if len(general.items) > len(specific.items) or general == specific:
        return None
    specific_conditions = condition_texts(specific.conditions)
    for embedding in _embeddings(general, specific):
        ref = Refinement("", embedding)
        mapping = ref.renaming(general, specific)
        if any(mapping.get(v) is None for c in general.conditions for v in variables_in(c)):
            continue  # a condition on an item the specific query leaves unnamed cannot be carried over
        renamed = condition_texts(rename(c, mapping) for c in general.conditions)
        added_vars = {specific.items[k].var for k in ref.added(specific)} - {None}
        extra = [c for c in specific.conditions if condition_texts([c]) - renamed]
        if not renamed <= specific_conditions or any(not set(variables_in(c)) & added_vars for c in extra):
            continue
        same = all(general.items[g].same_as(specific.items[s]) for g, s in enumerate(embedding))
        if len(embedding) == len(specific.items):
            if not same:
                return Refinement("concept", embedding)
        else:
            return Refinement("pattern" if same else "both", embedding)
    return None


def lattice(shapes: dict) -> nx.DiGraph:
    """The refinement relations between named shapes as a DiGraph: an edge general -> specific for
    every pair related by concept, pattern or both (attributes ``kind`` and ``refinement``)."""
    graph = nx.DiGraph()
    graph.add_nodes_from((name, {"shape": shape, "label": str(shape)}) for name, shape in shapes.items())
    graph.add_edges_from((g, s, {"kind": ref.kind, "refinement": ref}) for g, s, ref in _related(tuple(shapes.items())))
    return graph


@lru_cache(maxsize=256)
def _related(named: tuple) -> tuple:
    """(general name, specific name, refinement) of every related pair of the (name, shape) pairs, once per
    process and workload (every fresh cube over the same queries)."""
    return tuple(
        (g, s, ref)
        for g, general in named
        for s, specific in named
        if g != s and (ref := refinement(general, specific)) is not None
    )
