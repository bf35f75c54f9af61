"""DEFINE conditions that read other rows of the match (``A.price`` in B's condition, ``FIRST`` / ``LAST``,
``CLASSIFIER()``, ``MATCH_NUMBER()``, running aggregates such as ``AVG(B.price)``), compiled for the Pike
VM (``kernel.py``): each thread carries registers, the rows last (and first) mapped to each variable or
subset a condition reads and each aggregate's count and sum (or minimum, maximum) over the rows mapped so
far, and a condition is a short postfix program over column values that the kernel runs at the row it
tries (docs/language.md §13). The query's text is only ever parsed: the programs are arrays of operator
codes.

A condition's conjuncts that read only their own row stay whole-column masks (``columns.py``); the rest
compile here. ``compile_defines`` raises ``NotCompiled`` (the reason) for what it does not take: datetime
columns, columns of mixed types, strings in arithmetic or compared with numbers (the reference raises or
decides those), integers beyond 2**53, SUM / AVG / MIN / MAX of other than numbers, an aggregate's argument
reading other than its row and PREV / NEXT of it, a condition not boolean. Those queries run on the
reference matcher (``semantics.py``), whose rules this follows row for row (tests compare them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np

from ..errors import QueryError
from . import ast as A
from .columns import Columns, row_local

# Where a condition reads a row from: the row tried, a register, the FIRST row of a group the tried row
# joins, the universal variable's FIRST / LAST (the match's rows are contiguous from its start).
RS_CUR, RS_REG, RS_FIRST_INCL, RS_UFIRST, RS_ULAST = range(5)
# The postfix program's operators.
(
    OP_CONST,
    OP_LOAD,
    OP_NUMBER,
    OP_NEG,
    OP_ADD,
    OP_SUB,
    OP_MUL,
    OP_DIV,
    OP_MOD,
    OP_EQ,
    OP_NE,
    OP_LT,
    OP_LE,
    OP_GT,
    OP_GE,
    OP_AND,
    OP_OR,
    OP_NOT,
    OP_ISNULL,
    OP_NOTNULL,
    OP_IN,
    OP_AGG,
) = range(22)
_ARITH = {"+": OP_ADD, "-": OP_SUB, "*": OP_MUL, "/": OP_DIV, "%": OP_MOD}
_CMP = {"=": OP_EQ, "<>": OP_NE, "<": OP_LT, "<=": OP_LE, ">": OP_GT, ">=": OP_GE}
EXACT = 2**53  # integers a float64 holds exactly
# Running aggregates in DEFINE: each is two registers, the count of non-null values and their sum (SUM,
# AVG), least (MIN) or greatest (MAX).
AGG_COUNT, AGG_SUM, AGG_AVG, AGG_MIN, AGG_MAX = range(5)
_AGG = {"COUNT": AGG_COUNT, "SUM": AGG_SUM, "AVG": AGG_AVG, "MIN": AGG_MIN, "MAX": AGG_MAX}
MATCH = "*"  # the group of an aggregate over every row of the match (no variable can be named so)


class NotCompiled(Exception):
    """A DEFINE condition the VM does not take; the message says which and why."""


@dataclass
class Conditions:
    """What the kernel reads to decide the conditions that look beyond their row, as flat arrays.

    Per variable ``v``: row slots ``r_*[r_start[v]:r_start[v + 1]]``, its program ``c_*[c_start[v]:...]``
    (empty: only the whole-column mask decides), register updates ``u_*[u_start[v]:...]`` when a row maps to
    ``v``. ``values`` / ``nulls``: the columns the programs read (strings as codes in sorted order).
    ``groups``: per register, its group (the variable, subset or match whose rows it holds). Registers are
    floats (row numbers are exact in them), first ``reg_init``. Per aggregate ``k``: its two registers from
    ``agg_reg[k]``, its function ``agg_func[k]``, its argument at every row ``agg_values[k]`` /
    ``agg_nulls[k]``; per variable, the aggregates a row mapped to it adds to,
    ``ua_agg[ua_start[v]:ua_start[v + 1]]``."""

    n_regs: int
    groups: np.ndarray
    r_start: np.ndarray
    r_kind: np.ndarray
    r_reg: np.ndarray
    r_k: np.ndarray
    r_lo: np.ndarray
    r_hi: np.ndarray
    r_shift: np.ndarray
    c_start: np.ndarray
    c_op: np.ndarray
    c_a: np.ndarray
    c_b: np.ndarray
    consts: np.ndarray
    u_start: np.ndarray
    u_last: np.ndarray
    u_nlast: np.ndarray
    u_first: np.ndarray
    u_nfirst: np.ndarray
    values: np.ndarray
    nulls: np.ndarray
    reads: Tuple[frozenset, ...]  # per variable, the groups its program reads
    reg_init: np.ndarray
    agg_reg: np.ndarray
    agg_func: np.ndarray
    agg_values: np.ndarray
    agg_nulls: np.ndarray
    ua_start: np.ndarray
    ua_agg: np.ndarray

    @classmethod
    def none(cls, n_vars: int, n: int) -> "Conditions":
        """No program: every condition is a whole-column mask."""
        zero = np.zeros(n_vars + 1, np.int64)
        empty = np.zeros(0, np.int64)
        return cls(
            0,
            empty,
            zero,
            empty,
            empty,
            empty,
            empty,
            empty,
            empty,
            zero,
            empty,
            empty,
            empty,
            np.zeros(0),
            zero,
            empty,
            empty,
            empty,
            empty,
            np.zeros((0, 1)),
            np.zeros((0, 1), np.uint8),
            tuple(frozenset() for _ in range(n_vars)),
            np.zeros(0),
            empty,
            empty,
            np.zeros((0, 1)),
            np.zeros((0, 1), np.uint8),
            zero,
            empty,
        )

    def programs(self) -> tuple:
        """The rows and programs, as the kernel takes them."""
        return (
            self.r_start,
            self.r_kind,
            self.r_reg,
            self.r_k,
            self.r_lo,
            self.r_hi,
            self.r_shift,
            self.c_start,
            self.c_op,
            self.c_a,
            self.c_b,
            self.consts,
            self.values,
            self.nulls,
            self.reg_init,
            self.agg_reg,
            self.agg_func,
            self.agg_values,
            self.agg_nulls,
        )

    def updates(self) -> tuple:
        """The register updates per variable, as the kernel takes them."""
        return (
            self.u_start,
            self.u_last,
            self.u_nlast,
            self.u_first,
            self.u_nfirst,
            self.reg_init,
            self.ua_start,
            self.ua_agg,
            self.agg_reg,
            self.agg_func,
            self.agg_values,
            self.agg_nulls,
        )

    def live(self, op, a, b) -> np.ndarray:
        """Per instruction and register: whether a condition still to be tried from there reads the
        register's group (threads that differ only in dead registers are the same thread)."""
        n_prog = len(op)
        out = np.zeros((n_prog, max(self.n_regs, 1)), np.uint8)
        if self.n_regs == 0:
            return out
        from .program import CHAR, END, JMP, MATCH, SPLIT, START

        preds: List[List[int]] = [[] for _ in range(n_prog)]
        for pc in range(n_prog):
            o = op[pc]
            succ = (
                [a[pc], b[pc]]
                if o == SPLIT
                else [a[pc]]
                if o == JMP
                else []
                if o == MATCH
                else [pc + 1]
                if o in (CHAR, START, END)
                else []
            )
            for s in succ:
                preds[s].append(pc)
        for group in set(self.groups.tolist()):
            regs = self.groups == group
            seen = np.zeros(n_prog, bool)
            todo = [pc for pc in range(n_prog) if op[pc] == CHAR and group in self.reads[a[pc]]]
            for pc in todo:
                seen[pc] = True
            while todo:
                pc = todo.pop()
                for p in preds[pc]:
                    if not seen[p]:
                        seen[p] = True
                        todo.append(p)
            out[np.ix_(seen, regs)] = 1
        return out


def split_define(var: str, expr, subsets) -> Tuple[Optional[object], Optional[object]]:
    """(the conjuncts of ``expr`` that read only their own row, the others), each None when there are none."""
    items = expr.items if isinstance(expr, A.And) else (expr,)
    local = [item for item in items if row_local(item, var, subsets)]
    other = [item for item in items if not row_local(item, var, subsets)]

    def joined(parts):
        return None if not parts else parts[0] if len(parts) == 1 else A.And(tuple(parts))

    return joined(local), joined(other)


def compile_defines(query: A.Recognize, columns: Columns) -> Conditions:
    """The programs of the query's DEFINE conditions that read beyond their row (``NotCompiled``: one the
    VM does not take)."""
    variables = query.variables
    subsets = dict(query.subsets)
    programs = {}
    for var, expr in query.defines:
        _, other = split_define(var, expr, subsets)
        if other is not None:
            programs[var] = other
    if not programs:
        return Conditions.none(len(variables), columns.n)
    builder = _Builder(query, columns, subsets)
    for var in variables:
        if var in programs:
            builder.condition(var, programs[var])
        builder.close_var()
    return builder.build()


class _Builder:
    def __init__(self, query: A.Recognize, columns: Columns, subsets):
        self.query = query
        self.columns = columns
        self.subsets = subsets
        self.variables = query.variables
        self.rows: List[tuple] = []  # kind, (group, k) or reg, k, lo, hi, shift
        self.code: List[tuple] = []
        self.r_start, self.c_start = [0], [0]
        self.consts: List[float] = []
        self.depth_last: Dict[str, int] = {}  # per group: how many last rows its readers need
        self.depth_first: Dict[str, int] = {}
        self.column_index: Dict[str, int] = {}
        self.kinds: Dict[str, str] = {}
        self.reads: List[set] = []
        self.var: str = ""
        self.read: set = set()
        self.strings: set = set()
        self.var_rows: Dict[tuple, int] = {}
        self.aggregates: Dict[tuple, int] = {}  # (function, group, argument): its index
        self.agg_columns: List[tuple] = []  # per aggregate: function, group, values, nulls

    # ---- the groups a condition reads: a variable, a subset or the match, members known
    def members(self, group: Optional[str]) -> Tuple[str, ...]:
        return self.variables if group == MATCH else self.subsets.get(group, (group,))

    def condition(self, var: str, expr) -> None:
        self.var, self.read, self.var_rows = var, set(), {}
        kind = self.value(expr, None)
        if kind not in ("bool", "null"):
            raise NotCompiled(f"DEFINE {var} is not a condition (true or false) but a {kind}")

    def close_var(self) -> None:
        self.r_start.append(len(self.rows))
        self.c_start.append(len(self.code))
        self.reads.append(self.read)
        self.var, self.read = "", set()

    # ---- rows
    def slot(self, base: tuple, shifts: Tuple[int, ...]) -> int:
        """The row slot of ``base`` moved by ``shifts`` (PREV / NEXT, innermost last), shared within a
        condition."""
        key = (base, shifts)
        if key not in self.var_rows:
            self.var_rows[key] = len(self.rows) - self.r_start[-1]
            sums = np.cumsum((0,) + shifts)
            self.rows.append((base, int(sums.min()), int(sums.max()), int(sums[-1])))
        return self.var_rows[key]

    def logical(self, kind: str, group: Optional[str], k: int) -> tuple:
        """FIRST / LAST's row base: of the universal variable, or of a group (which the tried row joins or
        not)."""
        if group is None:
            return (RS_UFIRST if kind == "FIRST" else RS_ULAST, None, k)
        joins = self.var in self.members(group)
        if kind == "LAST" and joins and k == 0:
            return (RS_CUR, None, 0)
        self.read.add(group)
        if kind == "LAST":
            depth = k if joins else k + 1
            self.depth_last[group] = max(self.depth_last.get(group, 0), depth)
            return (RS_REG, ("last", group, depth - 1), 0)
        self.depth_first[group] = max(self.depth_first.get(group, 0), k + 1)
        return (RS_FIRST_INCL if joins else RS_REG, ("first", group, k), k)

    def anchor(self, expr) -> Tuple[tuple, Tuple[int, ...]]:
        """The row ``expr`` points at (``semantics._anchor``): a base and the physical moves after it."""
        if isinstance(expr, A.Navigation) and expr.kind in ("FIRST", "LAST"):
            return self.logical(expr.kind, self.one_variable(expr.arg), expr.offset), ()
        if isinstance(expr, A.Navigation):
            base, shifts = self.anchor(expr.arg)
            return base, shifts + (-expr.offset if expr.kind == "PREV" else expr.offset,)
        return self.logical("LAST", self.one_variable(expr), 0), ()

    def one_variable(self, expr) -> Optional[str]:
        names = A.variables_of(expr)
        if len(names) > 1:
            raise NotCompiled("a navigation's argument names two variables")
        return next(iter(names), None)

    # ---- values: emit the postfix program, return the static kind
    def emit(self, op: int, a: int = 0, b: int = 0) -> None:
        self.code.append((op, a, b))

    def value(self, expr, placed) -> str:
        if isinstance(expr, A.Literal):
            return self.literal(expr.value)
        if isinstance(expr, A.Column):
            base, shifts = placed if placed is not None else self.anchor(expr)
            return self.load(expr.name, self.slot(base, shifts))
        if isinstance(expr, A.Navigation):
            if placed is not None:
                if expr.kind in ("FIRST", "LAST"):
                    raise NotCompiled(f"{expr.kind} under another navigation")
                base, shifts = placed
                return self.value(expr.arg, (base, shifts + (-expr.offset if expr.kind == "PREV" else expr.offset,)))
            return self.value(A.innermost(expr), self.anchor(expr))
        if isinstance(expr, A.Classifier):
            return self.literal(self.var)
        if isinstance(expr, A.MatchNumber):
            self.emit(OP_NUMBER)
            return "num"
        if isinstance(expr, A.Aggregate):
            if placed is not None:
                raise NotCompiled(f"{expr.func} under a navigation")
            return self.aggregate(expr)
        if isinstance(expr, A.Negate):
            kind = self.value(expr.arg, placed)
            self.need(kind, ("num", "bool", "null"), "a negated value")
            self.emit(OP_NEG)
            return "null" if kind == "null" else "num"
        if isinstance(expr, A.Arith):
            kinds = (self.value(expr.left, placed), self.value(expr.right, placed))
            for kind in kinds:
                self.need(kind, ("num", "bool", "null"), f"an operand of {expr.op!r}")
            self.emit(_ARITH[expr.op])
            return "null" if "null" in kinds else "num"
        if isinstance(expr, A.Compare):
            kinds = (self.value(expr.left, placed), self.value(expr.right, placed))
            self.comparable(kinds)
            self.emit(_CMP[expr.op])
            return "bool"
        if isinstance(expr, (A.And, A.Or)):
            for item in expr.items:
                self.need(self.value(item, placed), ("bool", "null"), f"an operand of {type(expr).__name__.upper()}")
            self.emit(OP_AND if isinstance(expr, A.And) else OP_OR, len(expr.items))
            return "bool"
        if isinstance(expr, A.Not):
            self.need(self.value(expr.arg, placed), ("bool", "null"), "NOT's operand")
            self.emit(OP_NOT)
            return "bool"
        if isinstance(expr, A.IsNull):
            self.value(expr.arg, placed)
            self.emit(OP_NOTNULL if expr.negated else OP_ISNULL)
            return "bool"
        if isinstance(expr, A.InList):
            kinds = [self.value(expr.arg, placed)] + [self.value(item, placed) for item in expr.items]
            for kind in kinds[1:]:
                self.comparable((kinds[0], kind))
            self.emit(OP_IN, len(expr.items), int(expr.negated))
            return "bool"
        raise NotCompiled(f"{type(expr).__name__} in a DEFINE that reads other rows")

    def aggregate(self, expr: A.Aggregate) -> str:
        """A running aggregate over the rows of a group mapped so far, the tried row among them when it
        joins the group (``semantics._aggregate``): its argument is evaluated at every row beforehand."""
        n = self.columns.n
        if expr.arg is None:  # COUNT(*), COUNT(A.*): rows, never null
            group, values, null = expr.var, np.zeros(n), np.zeros(n, bool)
        else:
            group = self.one_variable(expr.arg)
            for node in A.walk(expr.arg):
                local = isinstance(node, (A.Literal, A.Column, A.Arith, A.Negate))
                if not local and not (isinstance(node, A.Navigation) and node.kind in ("PREV", "NEXT")):
                    raise NotCompiled(f"{type(node).__name__} in {expr.func}'s argument")
            try:
                values, null = self.columns.evaluate(expr.arg)
            except QueryError as err:  # strings in arithmetic: the reference decides where it matters
                raise NotCompiled(f"{expr.func}'s argument: {err}") from None
            values, null = np.asarray(values), np.asarray(null, bool)
            if expr.func != "COUNT":
                if values.dtype.kind not in "iuf":
                    raise NotCompiled(f"{expr.func} of {values.dtype} values")
                if values.dtype.kind in "iu" and np.abs(values[~null]).sum(dtype=float) > EXACT:
                    raise NotCompiled(f"{expr.func} of integers that may sum beyond a float's exact range")
                values = np.where(null, 0.0, values.astype(float))
            else:
                values = np.zeros(n)
        group = MATCH if group is None else group
        key = (expr.func, group, repr(expr.arg))
        if key not in self.aggregates:
            self.aggregates[key] = len(self.agg_columns)
            self.agg_columns.append((_AGG[expr.func], group, values, null))
        self.read.add(group)
        self.emit(OP_AGG, self.aggregates[key], int(self.var in self.members(group)))
        return "num"

    def need(self, kind: str, allowed, what: str) -> None:
        if kind not in allowed:
            raise NotCompiled(f"{what} is a {kind}")

    def comparable(self, kinds) -> None:
        known = {k for k in kinds if k != "null"}
        if "str" in known and len(known) > 1:
            raise NotCompiled("a string compared with a number")

    def literal(self, value) -> str:
        if value is None:
            self.emit(OP_CONST, self.const(0.0), 1)
            return "null"
        if isinstance(value, str):
            self.strings.add(value)
            self.emit(OP_CONST, self.const(value), 0)
            return "str"
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > EXACT:
            raise NotCompiled(f"the integer {value} is beyond a float's exact range")
        self.emit(OP_CONST, self.const(float(value)), 0)
        return "bool" if isinstance(value, bool) else "num"

    def const(self, value) -> int:
        self.consts.append(value)
        return len(self.consts) - 1

    def load(self, name: str, slot: int) -> str:
        if name not in self.column_index:
            values, null = self.columns.column(name)
            kind = values.dtype.kind
            if kind == "b":
                self.kinds[name] = "bool"
            elif kind in "iu":
                if len(values) and np.abs(values[~null]).max(initial=0) > EXACT:
                    raise NotCompiled(f"column {name!r} holds integers beyond a float's exact range")
                self.kinds[name] = "num"
            elif kind == "f":
                self.kinds[name] = "num"
            elif kind == "O" and all(isinstance(v, str) for v in values[~null]):
                self.kinds[name] = "str"
                self.strings.update(values[~null].tolist())
            else:
                raise NotCompiled(f"column {name!r} ({values.dtype}) in a DEFINE that reads other rows")
            self.column_index[name] = len(self.column_index)
        self.emit(OP_LOAD, self.column_index[name], slot)
        return self.kinds[name]

    # ---- the arrays
    def build(self) -> Conditions:
        # registers: per group, its last rows then its first rows
        layout: Dict[tuple, int] = {}
        groups: List[str] = []
        for group in sorted(set(self.depth_last) | set(self.depth_first)):
            for i in range(self.depth_last.get(group, 0)):
                layout[("last", group, i)] = len(groups)
                groups.append(group)
            for i in range(self.depth_first.get(group, 0)):
                layout[("first", group, i)] = len(groups)
                groups.append(group)
        agg_reg = []
        for _, group, _, _ in self.agg_columns:
            agg_reg.append(len(groups))
            groups += [group, group]
        group_ids = {g: i for i, g in enumerate(sorted(set(groups)))}
        r_kind, r_reg, r_k, r_lo, r_hi, r_shift = ([] for _ in range(6))
        for (kind, where, k), lo, hi, shift in self.rows:
            r_kind.append(kind)
            r_reg.append(layout[where] if where is not None else -1)
            r_k.append(k)
            r_lo.append(lo)
            r_hi.append(hi)
            r_shift.append(shift)
        n = self.columns.n
        u_start, u_last, u_nlast, u_first, u_nfirst = [0], [], [], [], []
        for var in self.variables:
            for group in sorted(set(self.depth_last) | set(self.depth_first)):
                if var in self.members(group):
                    nlast, nfirst = self.depth_last.get(group, 0), self.depth_first.get(group, 0)
                    u_last.append(layout[("last", group, 0)] if nlast else 0)
                    u_nlast.append(nlast)
                    u_first.append(layout[("first", group, 0)] if nfirst else 0)
                    u_nfirst.append(nfirst)
            u_start.append(len(u_last))
        ua_start, ua_agg = [0], []
        for var in self.variables:
            ua_agg += [k for k, (_, group, _, _) in enumerate(self.agg_columns) if var in self.members(group)]
            ua_start.append(len(ua_agg))
        reg_init = np.full(len(groups), -1.0)
        for k, (func, _, _, _) in enumerate(self.agg_columns):
            reg_init[agg_reg[k]] = 0.0
            reg_init[agg_reg[k] + 1] = np.inf if func == AGG_MIN else -np.inf if func == AGG_MAX else 0.0
        agg_values = np.zeros((max(len(self.agg_columns), 1), n))
        agg_nulls = np.ones((max(len(self.agg_columns), 1), n), np.uint8)
        for k, (_, _, column, null) in enumerate(self.agg_columns):
            agg_values[k] = column
            agg_nulls[k] = null
        strings = {s: float(i) for i, s in enumerate(sorted(self.strings))}
        consts = np.array([strings[c] if isinstance(c, str) else c for c in self.consts], dtype=float)
        values = np.zeros((max(len(self.column_index), 1), n))
        nulls = np.ones((max(len(self.column_index), 1), n), np.uint8)
        for name, i in self.column_index.items():
            column, null = self.columns.column(name)
            if self.kinds[name] == "str":
                codes = np.zeros(n)
                codes[~null] = [strings[s] for s in column[~null]]
                column = codes
            values[i] = np.where(null, 0.0, column.astype(float))
            nulls[i] = null
        ints = lambda xs: np.asarray(xs, dtype=np.int64)  # noqa: E731
        code = np.asarray(self.code, dtype=np.int64).reshape(-1, 3)
        return Conditions(
            len(groups),
            ints([group_ids[g] for g in groups]),
            ints(self.r_start),
            ints(r_kind),
            ints(r_reg),
            ints(r_k),
            ints(r_lo),
            ints(r_hi),
            ints(r_shift),
            ints(self.c_start),
            code[:, 0].copy(),
            code[:, 1].copy(),
            code[:, 2].copy(),
            consts,
            ints(u_start),
            ints(u_last),
            ints(u_nlast),
            ints(u_first),
            ints(u_nfirst),
            values,
            nulls,
            tuple(frozenset(group_ids[g] for g in read) for read in self.reads),
            reg_init,
            ints(agg_reg),
            ints([func for func, _, _, _ in self.agg_columns]),
            agg_values,
            agg_nulls,
            ints(ua_start),
            ints(ua_agg),
        )
