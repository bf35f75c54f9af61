"""Text -> AST: the lark grammar (``grammar.lark``) and one Transformer building ``cepkit.lang.ast`` nodes.

Semantic checks (variables, well-formedness, safety) run afterwards in ``checks.py``, never inside the
Transformer, so their errors are not wrapped by lark.
"""
from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from ..errors import QueryError
from . import ast as A

_CMP_CANON = {"==": "=", "<>": "!="}
_STRATEGY_CANON = {"NXT": "NEXT"}

# Friendly names for the terminals lark reports as expected.
_TERMINAL_NAMES = {
    "NAME": "a name", "KLEENE_TYPE": "a Kleene type (T+)", "SIGNED_NUMBER": "a number", "INT": "an integer",
    "STRING": "a string", "LPAR": "'('", "RPAR": "')'", "COMMA": "','", "SEMICOLON": "';'", "PLUS": "'+'",
    "MINUS": "'-'", "STAR": "'*'", "SLASH": "'/'", "CMP_OP": "a comparison", "UNIT": "a time unit",
    "EVENTS": "EVENTS", "LBRACE": "'{'", "RBRACE": "'}'", "LSQB": "'['", "RSQB": "']'", "DOT": "'.'",
    "BANG": "'!'", "STRATEGY_NAME": "a strategy", "CONSUME_POLICY": "ANY, PARTITION or NONE",
    "$END": "the end of the query", "AGG_NAME": "an aggregate", "LAST": "LAST", "MAX": "MAX",
}


@lru_cache(maxsize=1)
def _parser() -> Lark:
    grammar = resources.files("cepkit.lang").joinpath("grammar.lark").read_text()
    return Lark(grammar, parser="lalr", lexer="contextual", propagate_positions=True, maybe_placeholders=False)


def _span(meta) -> A.Span:
    if getattr(meta, "empty", True):
        return None
    return (meta.line, meta.column, meta.end_line, meta.end_column)


def _tok_span(tok: Token) -> A.Span:
    return (tok.line, tok.column, tok.end_line, tok.end_column)


def _number(text: str):
    # Digits only: an exact int (float() would round integers beyond 2**53).
    return int(text) if text.isdigit() else float(text)


@v_args(meta=True)
class _ToAst(Transformer):
    # ------------------------------------------------------------------ queries
    def start(self, meta, children):
        return children[0]

    def query(self, meta, children):
        select = strategy = None
        rest = list(children)
        if rest and isinstance(rest[0], tuple) and rest[0][0] == "select":
            _, strategy, select = rest.pop(0)
        pattern = rest.pop(0)
        where = rest.pop(0) if rest and isinstance(rest[0], tuple) and rest[0][0] == "where" else None
        clauses = rest.pop(0)
        select = clauses.pop("select", select)
        return A.QueryNode(pattern=pattern, where=where[1] if where else None, strategy=strategy, select=select,
                           span=_span(meta), **clauses)

    def core_query(self, meta, children):
        select = strategy = None
        rest = list(children)
        if isinstance(rest[0], tuple) and rest[0][0] == "select":
            _, strategy, select = rest.pop(0)
        source, pattern, where = rest.pop(0)
        clauses = rest.pop(0)
        select = clauses.pop("select", select)
        return A.QueryNode(pattern=pattern, where=where, strategy=strategy, select=select, source=source,
                           core_style=True, span=_span(meta), **clauses)

    def source_where(self, meta, children):
        name, pattern, *cond = children
        return (str(name), pattern, cond[0] if cond else None)

    def select(self, meta, children):
        strategy = children[0] if len(children) == 2 else None
        return ("select", strategy, children[-1])

    def select_all(self, meta, children):
        return None

    def select_vars(self, meta, children):
        return tuple(str(c) for c in children)

    def where(self, meta, children):
        return ("where", children[0])

    def clauses(self, meta, children):
        out = {}
        for key, value in children:
            out[key] = value
        return out

    def within(self, meta, children):
        amount = children[0].value
        unit = str(children[1]) if len(children) > 1 else None
        if unit is not None:  # keywords and units are case-insensitive: one spelling in the tree
            unit = "EVENTS" if unit.upper() == "EVENTS" else unit.lower()
        return ("within", A.Window(amount, unit, span=_span(meta)))

    def partition(self, meta, children):
        return ("partition_by", tuple(str(c) for c in children))

    def consume(self, meta, children):
        return ("consume", str(children[0]).upper())

    def return_(self, meta, children):
        return ("select", tuple(str(c) for c in children))

    def strategy_kw(self, meta, children):
        name = str(children[0]).upper()
        return _STRATEGY_CANON.get(name, name)

    # ------------------------------------------------------------------ patterns
    def atom(self, meta, children):
        type_ = str(children[0])
        var = str(children[1]) if len(children) > 1 else None
        return A.Atom(type_, var, span=_span(meta))

    def kleene_atom(self, meta, children):
        type_ = str(children[0])[:-1]
        if type_.upper() == "ANY":  # `ANY+` lexes as one Kleene-type token: it is ANY iterated
            type_ = None
        var = str(children[1]) if len(children) > 1 else None
        return A.Plus(A.Atom(type_, var, span=_span(meta)), span=_span(meta))

    def any_atom(self, meta, children):
        return A.Atom(None, str(children[0]) if children else None, span=_span(meta))

    def seq_infix(self, meta, children):
        return A.Seq(tuple(children), span=_span(meta))

    def seq(self, meta, children):
        return A.Seq(children[0], span=_span(meta))

    def and_(self, meta, children):
        return A.And(children[0], span=_span(meta))

    def or_infix(self, meta, children):
        return A.Or(tuple(children), span=_span(meta))

    def or_(self, meta, children):
        return A.Or(tuple(children), span=_span(meta))

    def filter(self, meta, children):
        return A.Filter(children[0], children[1], span=_span(meta))

    def plus(self, meta, children):
        return A.Plus(children[0], span=_span(meta))

    def strategy(self, meta, children):
        keyword, pattern = children
        return A.Strategy(self.strategy_kw(meta, [keyword]), pattern, span=_span(meta))

    def last_of_type(self, meta, children):
        _, type_ = children
        return A.Strategy("LAST", A.Atom(str(type_), span=_tok_span(type_)), span=_span(meta))

    def items(self, meta, children):
        return tuple(children)

    def not_(self, meta, children):
        return A.Not(children[0], span=_span(meta))

    def exists(self, meta, children):
        return A.Exists(children[0], span=_span(meta))

    # ------------------------------------------------------------------ conditions
    def bool_or(self, meta, children):
        return children[0] if len(children) == 1 else A.BoolOp("or", tuple(children), span=_span(meta))

    def bool_and(self, meta, children):
        return children[0] if len(children) == 1 else A.BoolOp("and", tuple(children), span=_span(meta))

    def bool_not(self, meta, children):
        return A.BoolNot(children[0], span=_span(meta))

    def compare(self, meta, children):
        left, op, right = children
        op = _CMP_CANON.get(str(op), str(op))
        return A.Compare(op, left, right, span=_span(meta))

    def in_(self, meta, children):
        return A.In(children[0], tuple(children[1:]), span=_span(meta))

    def arith(self, meta, children):
        left, op, right = children
        return A.Arith(str(op), left, right, span=_span(meta))

    def neg(self, meta, children):
        arg = children[-1]
        if isinstance(arg, A.Literal) and isinstance(arg.value, (int, float)) and not isinstance(arg.value, bool):
            return A.Literal(-arg.value, span=_span(meta))
        if isinstance(arg, A.Duration):
            return A.Duration(-arg.amount, arg.unit, span=_span(meta))
        return A.Neg(arg, span=_span(meta))

    def number(self, meta, children):
        return A.Literal(_number(str(children[0])), span=_span(meta))

    def number_lit(self, meta, children):
        return children[0]

    def duration(self, meta, children):
        return A.Duration(children[0].value, str(children[1]).lower(), span=_span(meta))

    def string_lit(self, meta, children):
        raw = str(children[0])[1:-1]
        return A.Literal(re.sub(r"\\(.)", r"\1", raw), span=_span(meta))

    def true_lit(self, meta, children):
        return A.Literal(True, span=_span(meta))

    def false_lit(self, meta, children):
        return A.Literal(False, span=_span(meta))

    def null_lit(self, meta, children):
        return A.Literal(None, span=_span(meta))

    def attr(self, meta, children):
        return A.Attr(str(children[0]), str(children[1]), span=_span(meta))

    def indexed_attr(self, meta, children):
        var, index, attr = children
        return A.Attr(str(var), str(attr), index, span=_span(meta))

    def index_abs(self, meta, children):
        return int(children[0])

    def index_i(self, meta, children):
        return "i"

    def index_i_minus(self, meta, children):
        k = int(children[-1])
        if k != 1:
            raise QueryError(f"only b[i] and b[i-1] are supported, not b[i-{k}]", None, meta.line, meta.column)
        return "i-1"

    def first_attr(self, meta, children):
        return A.Attr(str(children[0]), str(children[1]), "first", span=_span(meta))

    def last_attr(self, meta, children):
        return A.Attr(str(children[-2]), str(children[-1]), "last", span=_span(meta))

    def prev(self, meta, children):
        return A.Prev(A.Attr(str(children[0]), str(children[1]), span=_span(meta)), span=_span(meta))

    def count(self, meta, children):
        return A.Agg("count", str(children[0]), span=_span(meta))

    def agg(self, meta, children):
        func, var, attr = children
        return A.Agg(str(func).lower(), str(var), str(attr), span=_span(meta))

    def agg_max(self, meta, children):
        return A.Agg("max", str(children[-2]), str(children[-1]), span=_span(meta))


def _expected(err: UnexpectedInput) -> str:
    # ``accepts`` (what the parser would really take next) is exact; ``expected`` also lists the lookaheads
    # of merged LALR states, which would suggest ')' or '}' where none can stand.
    terminals = getattr(err, "accepts", None) or getattr(err, "expected", None) or getattr(err, "allowed", None)
    names = sorted({_TERMINAL_NAMES.get(t, t.lstrip("_").upper() if t.startswith("_") else repr(t))
                    for t in terminals or ()})
    if not names:
        return ""
    if len(names) > 8:
        names = names[:8] + ["..."]
    return "; expected " + ", ".join(names)


def parse_tree(text: str) -> A.QueryNode:
    """Parse query text into a ``QueryNode`` (syntax only; see ``cepkit.parse`` for the checks)."""
    try:
        tree = _parser().parse(text)
    except UnexpectedEOF as err:
        lines = text.splitlines() or [""]
        raise QueryError("the query ends too early" + _expected(err), text, len(lines), len(lines[-1]) + 1) from None
    except UnexpectedToken as err:
        if err.token.type == "$END":
            lines = text.splitlines() or [""]
            raise QueryError("the query ends too early" + _expected(err), text, len(lines),
                             len(lines[-1]) + 1) from None
        raise QueryError(f"unexpected {str(err.token)!r}" + _expected(err), text, err.line, err.column,
                         len(str(err.token))) from None
    except UnexpectedCharacters as err:
        raise QueryError(f"unexpected character {text[err.pos_in_stream]!r}" + _expected(err), text, err.line,
                         err.column) from None
    try:
        return _ToAst().transform(tree)
    except VisitError as err:
        inner = err.orig_exc
        if isinstance(inner, QueryError):
            raise QueryError(inner.reason, text, inner.line, inner.column) from None
        raise
