"""MATCH_RECOGNIZE text -> ``ast.Recognize``: the lark grammar (``grammar.lark``), one transformer, and the
checks a query must pass before it runs (variables defined, names known), each error with a caret."""

from __future__ import annotations

import itertools
from typing import Optional

import pandas as pd
from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, VisitError

from .. import grammars
from ..errors import QueryError, did_you_mean
from . import ast as A

FUNCTIONS = ("PREV", "NEXT", "FIRST", "LAST", "COUNT", "SUM", "AVG", "MIN", "MAX", "CLASSIFIER", "MATCH_NUMBER")
_NAVIGATION = ("PREV", "NEXT", "FIRST", "LAST")
_AGGREGATES = ("COUNT", "SUM", "AVG", "MIN", "MAX")
UNITS = {"MILLISECOND": "ms", "SECOND": "s", "MINUTE": "min", "HOUR": "h", "DAY": "D"}

_KEYWORDS = {
    "_SELECT": "SELECT",
    "_FROM": "FROM",
    "_MATCH_RECOGNIZE": "MATCH_RECOGNIZE",
    "_PARTITION": "PARTITION",
    "_ORDER": "ORDER",
    "_MEASURES": "MEASURES",
    "_ONE": "ONE",
    "_ALL": "ALL",
    "_AFTER": "AFTER",
    "_PATTERN": "PATTERN",
    "_WITHIN": "WITHIN",
    "_SUBSET": "SUBSET",
    "_DEFINE": "DEFINE",
    "_BY": "BY",
    "_ROW": "ROW",
    "_ROWS": "ROWS",
    "_PER": "PER",
    "_MATCH": "MATCH",
    "_SKIP": "SKIP",
    "_PAST": "PAST",
    "_LAST": "LAST",
    "_FIRST": "FIRST",
    "_NEXT": "NEXT",
    "_TO": "TO",
    "_SHOW": "SHOW",
    "_OMIT": "OMIT",
    "_WITH": "WITH",
    "_EMPTY": "EMPTY",
    "_MATCHES": "MATCHES",
    "_UNMATCHED": "UNMATCHED",
    "_AS": "AS",
    "_INTERVAL": "INTERVAL",
    "_PERMUTE": "PERMUTE",
    "_AND": "AND",
    "_OR": "OR",
    "_NOT": "NOT",
    "_IS": "IS",
    "_IN": "IN",
    "DIRECTION": "ASC or DESC",
    "SEMANTICS": "RUNNING or FINAL",
    "NULL": "NULL",
}
# The notation's words, lower case, for an editor's completion and colours: keywords, functions, units.
KEYWORDS = frozenset(
    word.lower()
    for word in (
        *(w for w in _KEYWORDS.values() if " " not in w),
        "ASC",
        "DESC",
        "RUNNING",
        "FINAL",
        *FUNCTIONS,
        *UNITS,
    )
)
_TERMINALS = {
    "NAME": "a name",
    "STRING": "a string",
    "NUMBER": "a number",
    "INT": "an integer",
    "CMP": "a comparison",
    "LPAR": "'('",
    "RPAR": "')'",
    "COMMA": "','",
    "$END": "the end of the query",
    "STAR_Q": "'*'",
    "PLUS_Q": "'+'",
    "QMARK": "'?'",
    "CLOSE_Q": "'}'",
    "LBRACE": "'{'",
    "VBAR": "'|'",
    "SEMICOLON": "';'",
}


def _parser() -> Lark:
    return grammars.parser("cepkit.match_recognize")


def is_recognize(text: str) -> bool:
    """Whether ``text`` is MATCH_RECOGNIZE (a word cepkit's own language does not have), not cepkit's language."""
    return "MATCH_RECOGNIZE" in text.upper()


def _name(token) -> str:
    text = str(token)
    return text[1:-1] if text.startswith('"') else text


def _span(token) -> Optional[A.Span]:
    if getattr(token, "line", None) is None:
        return None
    return (token.line, token.column, token.end_line, token.end_column)


class _Error(Exception):
    """Raised inside the transformer with the token to point at (lark wraps it in a VisitError)."""

    def __init__(self, message: str, token=None):
        super().__init__(message)
        self.message = message
        self.token = token


@v_args(inline=True)
class _ToAst(Transformer):
    # ---- patterns
    def p_var(self, name):
        return A.Var(_name(name), _span(name))

    def p_group(self, inner=None):
        return A.Empty() if inner is None else inner

    def p_start(self):
        return A.Anchor("^")

    def p_end(self):
        return A.Anchor("$")

    def p_exclude(self, inner):
        return A.Exclude(inner)

    def p_permute(self, *items):
        return A.Permute(tuple(items))

    def alternation(self, *items):
        return A.Alt(tuple(items))

    def concatenation(self, *items):
        return A.Concat(tuple(items))

    def quantified(self, body, quantifier):
        low, high, greedy = quantifier
        return A.Quant(body, low, high, greedy)

    def q_star(self, token):
        return 0, None, not str(token).endswith("?")

    def q_plus(self, token):
        return 1, None, not str(token).endswith("?")

    def q_optional(self, token):
        return 0, 1, str(token) != "??"

    def q_exact(self, n, close):
        return int(n), int(n), not str(close).endswith("?")

    def range_bound(self, value=None):
        return None if value is None else int(value)

    def q_range(self, low, high, close):
        low = 0 if low is None else low
        if high is not None and high < low:
            raise _Error(f"the quantifier's upper bound {high} is below its lower bound {low}", close)
        return low, high, not str(close).endswith("?")

    # ---- expressions
    def e_or(self, *items):
        return items[0] if len(items) == 1 else A.Or(tuple(items))

    def e_and(self, *items):
        return items[0] if len(items) == 1 else A.And(tuple(items))

    def e_not(self, arg):
        return A.Not(arg)

    def e_cmp(self, left, op, right):
        op = {"!=": "<>"}.get(str(op), str(op))
        return A.Compare(op, left, right)

    def e_is_null(self, arg, _null):
        return A.IsNull(arg)

    def e_is_not_null(self, arg, _null):
        return A.IsNull(arg, negated=True)

    def e_in(self, arg, *items):
        return A.InList(arg, tuple(items))

    def e_not_in(self, arg, *items):
        return A.InList(arg, tuple(items), negated=True)

    def e_arith(self, left, op, right):
        return A.Arith(str(op), left, right)

    def e_sign(self, op, arg):
        return A.Negate(arg) if str(op) == "-" else arg

    def e_number(self, token):
        text = str(token)
        return A.Literal(int(text) if text.isdigit() else float(text))

    def e_string(self, token):
        return A.Literal(str(token)[1:-1].replace("''", "'"))

    def e_true(self, _):
        return A.Literal(True)

    def e_false(self, _):
        return A.Literal(False)

    def e_null(self, _):
        return A.Literal(None)

    def e_column(self, name):
        return A.Column(None, _name(name), _span(name))

    def e_qualified(self, var, name):
        return A.Column(_name(var), _name(name), _span(var))

    def arguments(self, *args):
        return list(args)

    def star_arg(self):
        return ("*", None)

    def var_star_arg(self, var):
        return ("*", _name(var))

    def e_call(self, *parts):
        semantics = None
        if isinstance(parts[0], Token) and parts[0].type == "SEMANTICS":
            semantics, parts = str(parts[0]).upper(), parts[1:]
        name, args = parts[0], (parts[1] if len(parts) > 1 else [])
        func = str(name).upper()
        final = semantics == "FINAL"
        if func not in FUNCTIONS:
            raise _Error(
                f"unknown function {str(name)!r}; the functions are "
                + ", ".join(FUNCTIONS)
                + did_you_mean(str(name), FUNCTIONS, keyword=True),
                name,
            )
        stars = [a for a in args if isinstance(a, tuple)]
        if stars and (func != "COUNT" or len(args) != 1):
            raise _Error("'*' is an argument of COUNT only, alone: COUNT(*) or COUNT(var.*)", name)
        if semantics and func not in _NAVIGATION + _AGGREGATES + ("CLASSIFIER",):
            raise _Error(f"{semantics} applies to navigation, aggregates and CLASSIFIER, not {func}", name)
        if func in _NAVIGATION:
            if len(args) not in (1, 2):
                raise _Error(f"{func} takes an expression and an optional offset: {func}(A.price, 1)", name)
            offset = 1 if func in ("PREV", "NEXT") else 0
            if len(args) == 2:
                if not (
                    isinstance(args[1], A.Literal)
                    and isinstance(args[1].value, int)
                    and not isinstance(args[1].value, bool)
                    and args[1].value >= 0
                ):
                    raise _Error(f"{func}'s offset must be a whole number >= 0", name)
                offset = args[1].value
            return A.Navigation(func, args[0], offset, final)
        if func in _AGGREGATES:
            if len(args) != 1:
                raise _Error(f"{func} takes one argument", name)
            if stars:
                return A.Aggregate(func, None, stars[0][1], final)
            return A.Aggregate(func, args[0], None, final)
        if func == "CLASSIFIER":
            if args:
                raise _Error("CLASSIFIER() takes no argument", name)
            return A.Classifier(final)
        if args:
            raise _Error("MATCH_NUMBER() takes no argument", name)
        return A.MatchNumber()

    # ---- clauses
    def select_all(self):
        return None

    def select_names(self, *names):
        return tuple(_name(n) for n in names)

    def alias(self, name):
        return _name(name)

    def partition(self, *names):
        return ("partition", tuple(_name(n) for n in names))

    def order_item(self, name, direction=None):
        return (_name(name), direction is None or str(direction).upper() == "ASC")

    def order(self, *items):
        return ("order", tuple(items))

    def measure(self, expr, name):
        return (_name(name), expr)

    def measures(self, *items):
        return ("measures", tuple(items))

    def one_row(self):
        return ("rows", ("one", "show"))

    def all_rows(self, empty="show"):
        return ("rows", ("all", empty))

    def show_empty(self):
        return "show"

    def omit_empty(self):
        return "omit"

    def with_unmatched(self):
        return "unmatched"

    def after_skip(self, skip):
        return ("skip", skip)

    def skip_past_last_row(self):
        return ("past_last",)

    def skip_to_next_row(self):
        return ("next_row",)

    def skip_to_first(self, name):
        return ("first", _name(name))

    def skip_to_last(self, name):
        return ("last", _name(name))

    def pattern_clause(self, pattern=None):
        return ("pattern", A.Empty() if pattern is None else pattern)

    def within(self, amount, unit):
        text = str(amount)[1:-1].strip()
        key = str(unit).upper().rstrip("S")
        if key not in UNITS:
            raise _Error(
                f"unknown time unit {str(unit)!r}; the units are "
                + ", ".join(UNITS)
                + did_you_mean(key, UNITS, keyword=True),
                unit,
            )
        try:
            value = float(text)
        except ValueError:
            raise _Error(f"the interval {str(amount)} is not a number", amount) from None
        if value <= 0:
            raise _Error("the interval must be positive", amount)
        return ("within", pd.Timedelta(value, UNITS[key]))

    def subset_item(self, name, *members):
        return (_name(name), tuple(_name(m) for m in members), name)

    def subset(self, *items):
        return ("subset", tuple(items))

    def define_item(self, name, expr):
        return (_name(name), expr, name)

    def define(self, *items):
        return ("define", tuple(items))

    def body(self, *clauses):
        return dict(clauses)

    def query(self, select, source, body, *rest):
        alias = next((r for r in rest if isinstance(r, str)), None)
        return select, _name(source), body, alias


def _unexpected(err: UnexpectedInput, text: str) -> QueryError:
    accepts = getattr(err, "accepts", None) or getattr(err, "expected", None) or set()
    names = sorted({_KEYWORDS.get(t, _TERMINALS.get(t, t)) for t in accepts if not t.startswith("__")})
    expected = ("; expected " + ", ".join(names)) if names else ""
    token = getattr(err, "token", None)
    if isinstance(err, UnexpectedEOF) or (token is not None and token.type == "$END"):
        lines = text.splitlines() or [""]
        return QueryError("the query ends too early" + expected, text, len(lines), len(lines[-1]) + 1)
    if isinstance(err, UnexpectedCharacters):
        return QueryError(f"unexpected character {text[err.pos_in_stream]!r}" + expected, text, err.line, err.column)
    hint = ""
    if token is not None and token.type == "NAME":
        keywords = [_KEYWORDS[t] for t in accepts if t in _KEYWORDS and " " not in _KEYWORDS[t]]
        hint = did_you_mean(str(token), keywords, keyword=True)
    return QueryError(f"unexpected {str(token)!r}" + expected + hint, text, err.line, err.column, len(str(token)))


def parse(text: str) -> A.Recognize:
    """Parse and check a MATCH_RECOGNIZE query; a ``QueryError`` with line, column and caret otherwise.

    >>> q = parse("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts PATTERN (A B+) DEFINE B AS B.v > PREV(B.v))")
    >>> q.variables, q.skip, q.rows
    (('A', 'B'), ('past_last',), 'one')
    """
    if not isinstance(text, str):
        raise TypeError(f"a MATCH_RECOGNIZE query is a str, not {type(text).__name__}")
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as err:
        raise _unexpected(err, text) from None
    try:
        select, source, body, alias = _ToAst().transform(tree).children[0]
    except VisitError as err:
        inner = err.orig_exc
        if isinstance(inner, _Error):
            token = inner.token
            if token is not None and getattr(token, "line", None) is not None:
                raise QueryError(inner.message, text, token.line, token.column, len(str(token))) from None
            raise QueryError(inner.message, text) from None
        raise
    rows, empty = body.get("rows", ("one", "show"))
    query = A.Recognize(
        source=source,
        select=select,
        partition=body.get("partition", ()),
        order=body.get("order", ()),
        measures=body.get("measures", ()),
        rows=rows,
        empty=empty,
        skip=body.get("skip", ("past_last",)),
        pattern=body["pattern"],
        within=body.get("within"),
        subsets=tuple((n, m) for n, m, _ in body.get("subset", ())),
        defines=tuple((n, e) for n, e, _ in body["define"]),
        alias=alias,
        text=text,
    )
    _check(query, body, text)
    return query


def _check(query: A.Recognize, body: dict, text: str) -> None:
    variables = query.variables
    subsets = dict(query.subsets)
    for name, members, token in body.get("subset", ()):
        if name in variables:
            raise QueryError(
                f"SUBSET {name} has the name of a pattern variable", text, token.line, token.column, len(str(token))
            )
        for member in members:
            if member not in variables:
                raise QueryError(
                    f"SUBSET {name} lists {member!r}, which is not in the pattern" + did_you_mean(member, variables),
                    text,
                    token.line,
                    token.column,
                    len(str(token)),
                )
    seen = set()
    for name, _, token in body["define"]:
        if name not in variables:
            raise QueryError(
                f"DEFINE {name}: {name!r} is not a variable of the pattern" + did_you_mean(name, variables),
                text,
                token.line,
                token.column,
                len(str(token)),
            )
        if name in seen:
            raise QueryError(f"{name} is defined twice", text, token.line, token.column, len(str(token)))
        seen.add(name)
    known = tuple(variables) + tuple(subsets)
    for _, expr in query.defines + query.measures:
        for column in (node for node in A.walk(expr) if isinstance(node, A.Column)):
            if column.var is not None and column.var not in known:
                where = column.span or (None, None, None, None)
                raise QueryError(
                    f"{column.var!r} is not a pattern variable or subset" + did_you_mean(column.var, known),
                    text,
                    where[0],
                    where[1],
                    len(column.var),
                )
    for _, expr in query.defines:
        for node in A.walk(expr):
            if isinstance(node, (A.Navigation, A.Aggregate, A.Classifier)) and node.final:
                raise QueryError("FINAL is not allowed in DEFINE (a condition sees the match so far)", text)
    for _, expr in query.defines + query.measures:
        for node in A.walk(expr):
            if isinstance(node, (A.Navigation, A.Aggregate)) and node.arg is not None:
                inner = A.innermost(node.arg) if isinstance(node, A.Navigation) else node.arg
                for below in A.walk(inner):
                    if isinstance(below, (A.Aggregate, A.Classifier, A.MatchNumber)) or (
                        isinstance(below, A.Navigation) and below.kind in ("FIRST", "LAST")
                    ):
                        what = below.kind if isinstance(below, A.Navigation) else type(below).__name__.upper()
                        raise QueryError(
                            f"{what} cannot stand inside the argument of "
                            f"{getattr(node, 'kind', getattr(node, 'func', ''))}: it reads rows of "
                            "its own",
                            text,
                        )
                if len(A.variables_of(inner)) > 1:
                    raise QueryError(
                        "the argument of a navigation or aggregate must name one variable, not "
                        + ", ".join(sorted(str(v) for v in A.variables_of(inner))),
                        text,
                    )
    if query.skip[0] in ("first", "last") and query.skip[1] not in known:
        raise QueryError(
            f"AFTER MATCH SKIP TO {query.skip[1]}: not a pattern variable or subset"
            + did_you_mean(query.skip[1], known),
            text,
        )
    names = [m for m, _ in query.measures]
    duplicate = next((m for m in names if names.count(m) > 1), None)
    if duplicate:
        raise QueryError(f"the measure {duplicate!r} is named twice", text)


def permutations(items):
    """PERMUTE's alternatives in preference order: the lexicographic order of the listed items' indexes."""
    return [A.Concat(tuple(order)) for order in itertools.permutations(items)]
