"""AST -> text. ``parse(pretty(q)) == q`` for every tree the parser can build.

Type and variable names that are keywords print in backquotes (`` `PATTERN` AS a ``): the parser reads a
backquoted word as a name wherever it stands. Patterns print in CEL notation (``A a ; B b``) when their items are plain patterns and in SASE/NEEL
notation (``SEQ(...)``) when they hold negations or conditions; parentheses are added by precedence.
"""

from __future__ import annotations

import math
import re
from numbers import Integral

from . import ast as A
from .ast import Visitor
from .parser import KEYWORDS

# Pattern precedence, loosest first: FILTER < OR < ; < + < primary.
_P_FILTER, _P_OR, _P_SEQ, _P_PLUS, _P_PRIMARY = range(5)
# Condition precedence, loosest first.
_C_OR, _C_AND, _C_NOT, _C_CMP, _C_SUM, _C_PROD, _C_UNARY, _C_ATOM = range(8)
_ARITH_PREC = {"+": _C_SUM, "-": _C_SUM, "*": _C_PROD, "/": _C_PROD}


def _literal(value) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return _amount(value)


def _amount(value) -> str:
    """A number as the grammar reads it back: ints exact, floats by repr; inf and nan have no spelling."""
    if isinstance(value, Integral):
        return str(int(value))
    if not math.isfinite(value):
        raise ValueError(f"{value!r} has no spelling in the query language (numbers are finite, docs/limits.md)")
    return repr(float(value))


def _name(name: str) -> str:
    """A type or variable name; a keyword is backquoted so that it reads back as a name."""
    return f"`{name}`" if name.lower() in KEYWORDS else name


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _type_name(name: str) -> str:
    """A type name: a keyword backquoted, any other name that is not an identifier in double quotes."""
    if _IDENTIFIER.fullmatch(name):
        return _name(name)
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def is_spelled_as_item(cond: A.Expr) -> bool:
    """Whether a condition can be written as an item of SEQ(...)/AND(...) or after ``!``: not when it starts
    with a string that only ``,``, ``)`` or ``or`` follows, since the parser reads that string as a type name
    (docs/language.md §2)."""
    parent = None
    while isinstance(cond, (A.Arith, A.Compare, A.In, A.BoolOp)):
        parent, cond = (
            cond,
            (cond.args[0] if isinstance(cond, A.BoolOp) else cond.arg if isinstance(cond, A.In) else cond.left),
        )
    leads = isinstance(cond, A.Literal) and isinstance(cond.value, str)
    return not leads or not (parent is None or (isinstance(parent, A.BoolOp) and parent.op == "or"))


class _Printer(Visitor):
    # ------------------------------------------------------------------ patterns: (text, precedence)
    def pat(self, node, min_prec: int) -> str:
        text, prec = self.visit(node)
        return f"({text})" if prec < min_prec else text

    def visit_atom(self, n: A.Atom):
        type_ = _type_name(n.type) if n.type is not None else "ANY"
        return (f"{type_} AS {_name(n.var)}" if n.var else type_), _P_PRIMARY

    def visit_seq(self, n: A.Seq):
        if len(n.items) >= 2 and all(isinstance(i, A.Pattern) for i in n.items):
            return " ; ".join(self.pat(i, _P_PLUS) for i in n.items), _P_SEQ
        return "SEQ(" + ", ".join(self.item(i) for i in n.items) + ")", _P_PRIMARY

    def visit_and(self, n: A.And):
        return "AND(" + ", ".join(self.item(i) for i in n.items) + ")", _P_PRIMARY

    def visit_or(self, n: A.Or):
        if len(n.items) >= 2:
            return " OR ".join(self.pat(i, _P_SEQ) for i in n.items), _P_OR
        return "OR(" + ", ".join(self.pat(i, _P_FILTER) for i in n.items) + ")", _P_PRIMARY

    def visit_filter(self, n: A.Filter):
        return f"{self.pat(n.pattern, _P_FILTER)} FILTER {self.cond(n.cond)}", _P_FILTER

    def visit_plus(self, n: A.Plus):
        inner = n.pattern
        if isinstance(inner, A.Atom) and inner.type is not None:
            kleene = _type_name(inner.type) + "+"
            return (f"{kleene} AS {_name(inner.var)}" if inner.var else kleene), _P_PLUS
        return self.pat(inner, _P_PRIMARY) + "+", _P_PLUS

    def visit_strategy(self, n: A.Strategy):
        return f"{n.name}({self.pat(n.pattern, _P_FILTER)})", _P_PRIMARY

    def item(self, node) -> str:
        if isinstance(node, A.Not):
            return "!" + self.neg_item(node.item)
        if isinstance(node, A.Exists):
            return "EXISTS " + self.neg_item(node.item)
        if isinstance(node, A.Expr):
            return self.item_cond(node)
        return self.pat(node, _P_FILTER)

    def item_cond(self, node) -> str:
        if not is_spelled_as_item(node):
            raise ValueError(f"{node!r} has no spelling as an item: a string alone there is a type name")
        return self.cond(node)

    def neg_item(self, node) -> str:
        if isinstance(node, (A.Not, A.Exists)):
            return self.item(node)
        if isinstance(node, A.Expr):
            return "(" + self.item_cond(node) + ")"
        return self.pat(node, _P_PRIMARY)

    # ------------------------------------------------------------------ conditions
    def cond(self, node, min_prec: int = _C_OR) -> str:
        text, prec = self.visit(node)
        return f"({text})" if prec < min_prec else text

    def visit_literal(self, n: A.Literal):
        is_negative = isinstance(n.value, (int, float)) and not isinstance(n.value, bool) and n.value < 0
        return _literal(n.value), (_C_UNARY if is_negative else _C_ATOM)

    def visit_duration(self, n: A.Duration):
        return f"{_amount(n.amount)} {n.unit}", (_C_UNARY if n.amount < 0 else _C_ATOM)

    def visit_attr(self, n: A.Attr):
        if n.index is None:
            return f"{_name(n.var)}.{n.attr}", _C_ATOM
        if n.index in ("first", "last"):
            return f"{n.index}({_name(n.var)}).{n.attr}", _C_ATOM
        return f"{_name(n.var)}[{n.index}].{n.attr}", _C_ATOM

    def visit_agg(self, n: A.Agg):
        var = _name(n.var)
        return (f"{n.func}({var})" if n.attr is None else f"{n.func}({var}.{n.attr})"), _C_ATOM

    def visit_prev(self, n: A.Prev):
        return f"prev({_name(n.arg.var)}.{n.arg.attr})", _C_ATOM

    def visit_arith(self, n: A.Arith):
        prec = _ARITH_PREC[n.op]
        return f"{self.cond(n.left, prec)} {n.op} {self.cond(n.right, prec + 1)}", prec

    def visit_neg(self, n: A.Neg):
        return "-" + self.cond(n.arg, _C_ATOM), _C_UNARY

    def visit_compare(self, n: A.Compare):
        return f"{self.cond(n.left, _C_SUM)} {n.op} {self.cond(n.right, _C_SUM)}", _C_CMP

    def visit_in(self, n: A.In):
        values = ", ".join(self.cond(v, _C_SUM) for v in n.values)
        return f"{self.cond(n.arg, _C_SUM)} IN ({values})", _C_CMP

    def visit_boolop(self, n: A.BoolOp):
        prec = _C_OR if n.op == "or" else _C_AND
        return f" {n.op} ".join(self.cond(a, _C_NOT) for a in n.args), prec

    def visit_boolnot(self, n: A.BoolNot):
        return "not " + self.cond(n.arg, _C_NOT), _C_NOT

    # ------------------------------------------------------------------ queries
    def visit_window(self, n: A.Window):
        return _amount(n.amount) + (f" {n.unit}" if n.unit else "")

    def visit_querynode(self, q: A.QueryNode) -> str:
        parts = []
        head = ""
        if q.strategy or (q.select is not None and q.core_style):
            head = "SELECT " + (q.strategy + " " if q.strategy else "")
            head += ", ".join(map(_name, q.select)) if q.select is not None else "*"
            parts.append(head)
        if q.core_style:
            parts.append(f"FROM {_name(q.source)} WHERE {self.pat(q.pattern, _P_FILTER)}")
        else:
            parts.append(self.pat(q.pattern, _P_FILTER) if not head else "PATTERN " + self.pat(q.pattern, _P_FILTER))
        if q.where is not None:
            parts.append("WHERE " + self.cond(q.where))
        if q.within is not None:
            parts.append("WITHIN " + self.visit(q.within))
        if q.partition_by:
            parts.append("PARTITION BY " + ", ".join(q.partition_by))
        if q.consume:
            parts.append("CONSUME BY " + q.consume)
        if q.select is not None and not head:
            parts.append("RETURN " + ", ".join(map(_name, q.select)))
        if q.limit is not None:
            parts.append(f"LIMIT {q.limit}")
        return " ".join(parts)


def pretty(node) -> str:
    """Print a query, pattern or condition as parseable text.

    Parameters
    ----------
    node : QueryNode, Pattern, Expr or pattern item
        A node of a parsed query (``Query.ast`` and its parts).

    Returns
    -------
    str
        Text that ``cepkit.parse`` reads back as the same node.

    Examples
    --------
    >>> import cepkit
    >>> cepkit.pretty(cepkit.parse("T x ; H y WITHIN 5").ast)
    'T AS x ; H AS y WITHIN 5'
    """
    printer = _Printer()
    if isinstance(node, A.QueryNode):
        return printer.visit(node)
    if isinstance(node, A.Expr):
        return printer.cond(node)
    if isinstance(node, A.Pattern):
        return printer.pat(node, _P_FILTER)
    return printer.item(node)
