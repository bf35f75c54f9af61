"""The syntax tree (issue 2, item 2): immutable, hashable, compared without source spans, with a visitor."""

import dataclasses

import pytest

import cepkit
from cepkit.lang import ast as A


def test_nodes_are_frozen_hashable_and_compare_without_spans():
    tree = cepkit.parse("SEQ(A a, !B b, C c) WHERE a.v > 1").ast
    with pytest.raises(dataclasses.FrozenInstanceError):
        tree.pattern = A.Atom("X", "x")
    spaced = cepkit.parse("  SEQ(A a, !B b, C c)\n  WHERE  a.v > 1").ast
    assert spaced.where.span != tree.where.span  # spans differ, the trees do not
    assert spaced == tree and hash(spaced) == hash(tree) and len({spaced, tree}) == 1
    assert cepkit.parse("SEQ(A a, SEQ(!B b, C c)) WHERE a.v > 1").ast != tree  # a nested SEQ is another tree


class _Types(A.Visitor):
    """Event types of the positive atoms, left to right; negations skipped."""

    def visit_seq(self, node):
        return [t for item in node.items if isinstance(item, A.Node) for t in self.visit(item)]

    def visit_not(self, node):
        return []

    def visit_atom(self, node):
        return [node.type]


def test_the_visitor_dispatches_on_the_node_class_and_names_what_it_lacks():
    pattern = cepkit.parse("SEQ(A a, !B b, C c)").ast.pattern
    assert _Types().visit(pattern) == ["A", "C"]
    with pytest.raises(NotImplementedError, match="_Types has no visit_or"):
        _Types().visit(cepkit.parse("A a OR B b").ast.pattern)


def test_transform_rebuilds_bottom_up_and_leaves_the_original_alone():
    tree = cepkit.parse("SEQ(A a, B b) WHERE a.v > 1").ast
    renamed = tree.transform(lambda n: A.Atom(n.type.lower(), n.var) if isinstance(n, A.Atom) else n)
    assert [a.type for a in renamed.find_all(A.Atom)] == ["a", "b"]
    assert [a.type for a in tree.find_all(A.Atom)] == ["A", "B"]
    assert renamed.where == tree.where
