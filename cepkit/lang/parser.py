"""Text -> AST: the lark grammar (``grammar.lark``) and one transformer building ``cepkit.lang.ast`` nodes.

Semantic checks (variables, well-formedness, safety) run afterwards in ``checks.py``. The transformer runs
bottom-up without recursion, and ``cepkit.lang.limits`` bounds what the rest of cepkit must walk (nesting
depth, number sizes): any text gives a tree or a ``QueryError`` with a caret, never a ``RecursionError``.
Positions count lines as ``str.splitlines`` does (``\\r``, ``\\r\\n``, ``\\u2028``... each end a line), so the
caret lands on the line ``caret_snippet`` shows.
"""

from __future__ import annotations

import re
from typing import Optional
from bisect import bisect_right

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from .. import grammars
from ..errors import QueryError, did_you_mean
from . import ast as A
from .limits import check_limits

# The grammar's words that a name may not be where the parser could read a keyword (units excluded: no name
# stands where a unit can): the printer backquotes such names. tests/lang/test_keywords.py checks the list.
KEYWORDS = frozenset(
    {
        "select",
        "from",
        "where",
        "pattern",
        "within",
        "partition",
        "by",
        "consume",
        "return",
        "limit",
        "filter",
        "seq",
        "and",
        "or",
        "not",
        "in",
        "as",
        "any",
        "exists",
        "true",
        "false",
        "null",
        "first",
        "last",
        "prev",
        "count",
        "max",
        "events",
        "all",
        "next",
        "nxt",
        "strict",
        "stnm",
        "robust_stnm",
        "partition_strict",
        "sum",
        "avg",
        "min",
        "none",
        "i",
    }
)

_CMP_CANON = {"==": "=", "<>": "!="}
_STRATEGY_CANON = {"NXT": "NEXT"}

# Friendly names for the terminals lark reports as expected.
_TERMINAL_NAMES = {
    "NAME": "a name",
    "KLEENE_TYPE": "a Kleene type (T+)",
    "QUOTED_KLEENE": 'a quoted Kleene type ("T"+)',
    "SIGNED_NUMBER": "a number",
    "INT": "an integer",
    "STRING": "a string",
    "LPAR": "'('",
    "RPAR": "')'",
    "COMMA": "','",
    "SEMICOLON": "';'",
    "PLUS": "'+'",
    "MINUS": "'-'",
    "STAR": "'*'",
    "SLASH": "'/'",
    "CMP_OP": "a comparison",
    "UNIT": "a time unit",
    "EVENTS": "EVENTS",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "LSQB": "'['",
    "RSQB": "']'",
    "DOT": "'.'",
    "BANG": "'!'",
    "STRATEGY_NAME": "a strategy",
    "CONSUME_POLICY": "ANY, PARTITION or NONE",
    "$END": "the end of the query",
    "AGG_NAME": "an aggregate",
    "LAST": "LAST",
    "MAX": "MAX",
}


def _parser() -> Lark:
    return grammars.parser("cepkit.lang")


class _Positions:
    """Offsets in the text -> (line, column), 1-based, lines split as ``str.splitlines`` splits them (lark
    itself only counts ``\\n``)."""

    def __init__(self, text: str):
        self.starts = [0]
        for line in text.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))

    def at(self, offset: int) -> tuple:
        line = min(bisect_right(self.starts, offset) - 1, max(len(self.starts) - 2, 0))
        return line + 1, offset - self.starts[line] + 1

    def span(self, start: int, end: int) -> A.Span:
        return (*self.at(start), *self.at(end))


def _name(token) -> str:
    """A NAME token's text, without the backquotes that let a keyword be a name."""
    text = str(token)
    return text[1:-1] if text.startswith("`") else text


def _unquoted(text: str) -> str:
    """A quoted token's text without its quotes, each backslash escape read as the character it escapes."""
    return re.sub(r"\\(.)", r"\1", text[1:-1])


def _number(text: str):
    # Digits only: an exact int (float() would round integers beyond 2**53).
    return int(text) if text.isdigit() else float(text)


class _ToAst:
    """Parse tree -> AST, bottom-up without recursion: each method builds the node of the rule it is named after
    from its meta (positions) and its already built children."""

    def __init__(self, text: str):
        self.text = text
        self.positions = _Positions(text)
        self.name_spans: list = []  # ((clause, name, span), ...) of PARTITION BY, RETURN and SELECT

    def transform(self, tree: Tree):
        built = {}
        for subtree in tree.iter_subtrees():  # children before their parents
            children = [built.pop(id(c)) if isinstance(c, Tree) else c for c in subtree.children]
            built[id(subtree)] = getattr(self, subtree.data)(subtree.meta, children)
        return built[id(tree)]

    def _span(self, meta) -> A.Span:
        if getattr(meta, "empty", True):
            return None
        return self.positions.span(meta.start_pos, meta.end_pos)

    def _tok_span(self, tok: Token) -> A.Span:
        return self.positions.span(tok.start_pos, tok.end_pos)

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
        return A.QueryNode(
            pattern=pattern,
            where=where[1] if where else None,
            strategy=strategy,
            select=select,
            span=self._span(meta),
            name_spans=tuple(self.name_spans),
            **clauses,
        )

    def core_query(self, meta, children):
        select = strategy = None
        rest = list(children)
        if isinstance(rest[0], tuple) and rest[0][0] == "select":
            _, strategy, select = rest.pop(0)
        source, pattern, where = rest.pop(0)
        clauses = rest.pop(0)
        select = clauses.pop("select", select)
        return A.QueryNode(
            pattern=pattern,
            where=where,
            strategy=strategy,
            select=select,
            source=source,
            core_style=True,
            span=self._span(meta),
            name_spans=tuple(self.name_spans),
            **clauses,
        )

    def source_where(self, meta, children):
        name, pattern, *cond = children
        return (_name(name), pattern, cond[0] if cond else None)

    def select(self, meta, children):
        strategy = children[0] if len(children) == 2 else None
        return ("select", strategy, children[-1])

    def select_all(self, meta, children):
        return None

    def select_vars(self, meta, children):
        return self._names("select", children)

    def _names(self, clause: str, tokens) -> tuple:
        """The names of a clause's tokens, their spans kept for errors about them."""
        self.name_spans.extend((clause, _name(tok), self._tok_span(tok)) for tok in tokens)
        return tuple(_name(tok) for tok in tokens)

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
        return ("within", A.Window(amount, unit, span=self._span(meta)))

    def partition(self, meta, children):
        return ("partition_by", self._names("partition_by", children))

    def consume(self, meta, children):
        return ("consume", str(children[0]).upper())

    def limit(self, meta, children):
        amount = children[0].value
        if isinstance(amount, bool) or not isinstance(amount, int) or amount < 1:
            raise QueryError.at(
                children[0], f"LIMIT takes a whole number of matches, 1 or more: got {amount!r}", self.text
            )
        return ("limit", amount)

    def return_(self, meta, children):
        return ("select", self._names("select", children))

    def strategy_kw(self, meta, children):
        name = str(children[0]).upper()
        return _STRATEGY_CANON.get(name, name)

    # ------------------------------------------------------------------ patterns
    def atom(self, meta, children):
        type_ = _name(children[0])
        var = _name(children[1]) if len(children) > 1 else None
        return A.Atom(type_, var, span=self._span(meta))

    def kleene_atom(self, meta, children):
        type_ = str(children[0])[:-1]
        if type_.upper() == "ANY":  # `ANY+` lexes as one Kleene-type token: it is ANY iterated (`ANY`+ is a type)
            type_ = None
        else:
            type_ = _name(type_)
        var = _name(children[1]) if len(children) > 1 else None
        return A.Plus(A.Atom(type_, var, span=self._span(meta)), span=self._span(meta))

    def quoted_atom(self, meta, children):
        var = _name(children[1]) if len(children) > 1 else None
        return A.Atom(self._quoted(children[0], meta), var, span=self._span(meta))

    def quoted_kleene_atom(self, meta, children):
        var = _name(children[1]) if len(children) > 1 else None
        atom = A.Atom(self._quoted(str(children[0])[:-1], meta), var, span=self._span(meta))
        return A.Plus(atom, span=self._span(meta))

    def _quoted(self, token, meta) -> str:
        """A quoted type name's text (escapes read as in strings); an empty one is a QueryError."""
        name = _unquoted(str(token))
        if not name:
            raise QueryError(
                "a type name in quotes cannot be empty", self.text, *self.positions.at(meta.start_pos), len(str(token))
            )
        return name

    def any_atom(self, meta, children):
        return A.Atom(None, _name(children[0]) if children else None, span=self._span(meta))

    def seq_infix(self, meta, children):
        return A.Seq(tuple(children), span=self._span(meta))

    def seq(self, meta, children):
        return A.Seq(children[0], span=self._span(meta))

    def and_(self, meta, children):
        return A.And(children[0], span=self._span(meta))

    def or_infix(self, meta, children):
        return A.Or(tuple(children), span=self._span(meta))

    def or_(self, meta, children):
        return A.Or(tuple(children), span=self._span(meta))

    def filter(self, meta, children):
        return A.Filter(children[0], children[1], span=self._span(meta))

    def plus(self, meta, children):
        return A.Plus(children[0], span=self._span(meta))

    def strategy(self, meta, children):
        keyword, pattern = children
        return A.Strategy(self.strategy_kw(meta, [keyword]), pattern, span=self._span(meta))

    def last_of_type(self, meta, children):
        _, type_ = children
        return A.Strategy("LAST", A.Atom(_name(type_), span=self._tok_span(type_)), span=self._span(meta))

    def items(self, meta, children):
        return tuple(children)

    def not_(self, meta, children):
        return A.Not(children[0], span=self._span(meta))

    def exists(self, meta, children):
        return A.Exists(children[0], span=self._span(meta))

    # ------------------------------------------------------------------ conditions
    def bool_or(self, meta, children):
        return children[0] if len(children) == 1 else A.BoolOp("or", tuple(children), span=self._span(meta))

    def bool_and(self, meta, children):
        return children[0] if len(children) == 1 else A.BoolOp("and", tuple(children), span=self._span(meta))

    def bool_not(self, meta, children):
        return A.BoolNot(children[0], span=self._span(meta))

    def compare(self, meta, children):
        left, op, right = children
        op = _CMP_CANON.get(str(op), str(op))
        return A.Compare(op, left, right, span=self._span(meta))

    def in_(self, meta, children):
        return A.In(children[0], tuple(children[1:]), span=self._span(meta))

    def arith(self, meta, children):
        left, op, right = children
        return A.Arith(str(op), left, right, span=self._span(meta))

    def string_sum(self, meta, children):
        text, op, right = children
        return A.Arith(
            str(op), A.Literal(_unquoted(str(text)), span=self._tok_span(text)), right, span=self._span(meta)
        )

    def neg(self, meta, children):
        arg = children[-1]
        if isinstance(arg, A.Literal) and isinstance(arg.value, (int, float)) and not isinstance(arg.value, bool):
            return A.Literal(-arg.value, span=self._span(meta))
        if isinstance(arg, A.Duration):
            return A.Duration(-arg.amount, arg.unit, span=self._span(meta))
        return A.Neg(arg, span=self._span(meta))

    def number(self, meta, children):
        return A.Literal(_number(str(children[0])), span=self._span(meta))

    def number_lit(self, meta, children):
        return children[0]

    def duration(self, meta, children):
        return A.Duration(children[0].value, str(children[1]).lower(), span=self._span(meta))

    def string_lit(self, meta, children):
        return A.Literal(_unquoted(str(children[0])), span=self._span(meta))

    def true_lit(self, meta, children):
        return A.Literal(True, span=self._span(meta))

    def false_lit(self, meta, children):
        return A.Literal(False, span=self._span(meta))

    def null_lit(self, meta, children):
        return A.Literal(None, span=self._span(meta))

    def attr(self, meta, children):
        return A.Attr(_name(children[0]), _name(children[1]), span=self._span(meta))

    def indexed_attr(self, meta, children):
        var, index, attr = children
        return A.Attr(_name(var), _name(attr), index, span=self._span(meta))

    def index_abs(self, meta, children):
        return int(children[0])

    def index_i(self, meta, children):
        return "i"

    def index_i_minus(self, meta, children):
        k = int(children[-1])
        if k != 1:
            raise QueryError(
                f"only b[i] and b[i-1] are supported, not b[i-{k}]", self.text, *self.positions.at(meta.start_pos)
            )
        return "i-1"

    def first_attr(self, meta, children):
        return A.Attr(_name(children[0]), _name(children[1]), "first", span=self._span(meta))

    def last_attr(self, meta, children):
        return A.Attr(_name(children[-2]), _name(children[-1]), "last", span=self._span(meta))

    def prev(self, meta, children):
        return A.Prev(A.Attr(_name(children[0]), _name(children[1]), span=self._span(meta)), span=self._span(meta))

    def count(self, meta, children):
        return A.Agg("count", _name(children[0]), span=self._span(meta))

    def agg(self, meta, children):
        func, var, attr = children
        return A.Agg(str(func).lower(), _name(var), _name(attr), span=self._span(meta))

    def agg_max(self, meta, children):
        return A.Agg("max", _name(children[-2]), _name(children[-1]), span=self._span(meta))


def _expected(err: UnexpectedInput) -> str:
    # ``accepts`` (what the parser would really take next) is exact; ``expected`` also lists the lookaheads
    # of merged LALR states, which would suggest ')' or '}' where none can stand.
    terminals = getattr(err, "accepts", None) or getattr(err, "expected", None) or getattr(err, "allowed", None)
    names = sorted(
        {_TERMINAL_NAMES.get(t, t.lstrip("_").upper() if t.startswith("_") else repr(t)) for t in terminals or ()}
    )
    if not names:
        return ""
    if len(names) > 8:
        names = names[:8] + ["..."]
    return "; expected " + ", ".join(names)


def _did_you_mean(err: UnexpectedToken, word: str) -> str:
    """For a word where a keyword or a time unit was expected: the closest one the parser would take (a
    misspelt ``WITHN``), or, after a number where a unit goes, every unit (``3 hrs``)."""
    if not re.fullmatch(r"[A-Za-z_]\w*", word):
        return ""
    accepts = set(getattr(err, "accepts", None) or getattr(err, "expected", None) or ())
    keywords = sorted({t.lstrip("_").upper() for t in accepts if t.lstrip("_").lower() in KEYWORDS})
    hint = did_you_mean(word, keywords, keyword=True, cutoff=0.75)
    if hint:  # a misspelt clause, also after a number (``> 1 PARTITON BY``)
        return hint
    if "UNIT" in accepts:
        units = sorted(A.TIME_UNITS, key=lambda u: (A.TIME_UNITS[u], len(u), u))
        return f"; the time units: {', '.join(units)}{did_you_mean(word, units, keyword=True)}"
    return ""


# the words written before "(" (operators, strategies, aggregates) and the strategies SELECT takes
_CALLED = ("SEQ", "AND", "OR", "NEXT", "LAST", "MAX", "STRICT", "FIRST", "PREV", "COUNT", "SUM", "AVG", "MIN")
_SELECTED = A.STRATEGIES


def _misspelt_word_before(text: str, token) -> Optional[tuple]:
    """(word, offset, message) when the unexpected token follows a name that is a misspelt keyword: ``SEQQ(``,
    ``avgg(b.v)`` (a name before ``(``), ``SELECT NXET *`` (a name where SELECT takes a strategy)."""
    before = re.search(r"(?:\b(SELECT)\s+)?\b([A-Za-z_]\w*)\s*$", text[: token.start_pos], re.IGNORECASE)
    if before is None or before.group(2).lower() in KEYWORDS:
        return None
    word = before.group(2)
    if str(token) == "(":
        choices, what = _CALLED, "before '('"
    elif before.group(1) and str(token) == "*" or before.group(1) and token.type == "NAME":
        choices, what = _SELECTED, "after SELECT"
    else:
        return None
    hint = did_you_mean(word, choices, keyword=True)
    return word, before.start(2), f"unknown word {word!r} {what}" + (hint or f"; the words there: {', '.join(choices)}")


def parse_tree(text: str) -> A.QueryNode:
    """Parse query text into a ``QueryNode`` (syntax and limits only; see ``cepkit.parse`` for the checks)."""
    positions = _Positions(text)
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as err:
        token = getattr(err, "token", None)
        if isinstance(err, UnexpectedEOF) or (token is not None and token.type == "$END"):
            lines = text.splitlines() or [""]
            raise QueryError(
                "the query ends too early" + _expected(err), text, len(lines), len(lines[-1]) + 1
            ) from None
        if isinstance(err, UnexpectedToken):
            misspelt = _misspelt_word_before(text, token)
            if misspelt is not None:
                word, start, message = misspelt
                raise QueryError(message, text, *positions.at(start), len(word)) from None
            raise QueryError(
                f"unexpected {str(token)!r}" + _expected(err) + _did_you_mean(err, str(token)),
                text,
                *positions.at(token.start_pos),
                len(str(token)),
            ) from None
        if isinstance(err, UnexpectedCharacters):
            raise QueryError(
                f"unexpected character {text[err.pos_in_stream]!r}" + _expected(err),
                text,
                *positions.at(err.pos_in_stream),
            ) from None
        raise
    query = _ToAst(text).transform(tree)
    check_limits(query, text)
    return query
