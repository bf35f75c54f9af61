"""A row pattern compiled to a program for a Pike VM (``kernel.py``): threads kept in preferment order, so
the first thread to reach MATCH is the match a backtracking matcher would find first, in time linear in
the rows it reads (docs/language.md §13).

Instructions are three int arrays (``op``, ``a``, ``b``): CHAR (a row for which variable ``a`` holds; ``b``
is 1 inside ``{- -}``), SPLIT (try ``a``, then ``b``), JMP ``a``, START (``^``), END (``$``), MATCH.
Quantifiers are unrolled to their bounds and an unbounded loop's empty iteration dies at the loop head,
the rule the reference's matcher follows too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Tuple

import numpy as np

from ..errors import QueryError
from . import ast as A
from .parser import permutations

CHAR, SPLIT, JMP, START, END, MATCH = range(6)
MAX_INSTRUCTIONS = 20_000
MAX_PERMUTE = 6


@dataclass(frozen=True)
class Program:
    op: np.ndarray
    a: np.ndarray
    b: np.ndarray
    variables: Tuple[str, ...]

    def __len__(self) -> int:
        return len(self.op)


def compile_pattern(pattern, variables: Tuple[str, ...], text: str = "") -> Program:
    """The program of ``pattern``; ``variables`` gives each variable its index (CHAR's ``a``)."""
    code: List[list] = []
    index = {v: i for i, v in enumerate(variables)}

    def emit(op, a=0, b=0) -> int:
        if len(code) >= MAX_INSTRUCTIONS:
            raise QueryError(
                f"the pattern unrolls to more than {MAX_INSTRUCTIONS} steps: lower its quantifiers' bounds", text
            )
        code.append([op, a, b])
        return len(code) - 1

    def gen(node, hidden: bool) -> None:
        if isinstance(node, A.Var):
            emit(CHAR, index[node.name], int(hidden))
        elif isinstance(node, A.Empty):
            pass
        elif isinstance(node, A.Anchor):
            emit(START if node.kind == "^" else END)
        elif isinstance(node, A.Exclude):
            gen(node.body, True)
        elif isinstance(node, A.Concat):
            for item in node.items:
                gen(item, hidden)
        elif isinstance(node, A.Permute):
            if len(node.items) > MAX_PERMUTE:
                raise QueryError(f"PERMUTE of {len(node.items)} items has too many orders; at most {MAX_PERMUTE}", text)
            gen(A.Alt(tuple(permutations(node.items))), hidden)
        elif isinstance(node, A.Alt):
            jumps = []
            for item in node.items[:-1]:
                split = emit(SPLIT)
                code[split][1] = len(code)
                gen(item, hidden)
                jumps.append(emit(JMP))
                code[split][2] = len(code)
            gen(node.items[-1], hidden)
            for jump in jumps:
                code[jump][1] = len(code)
        elif isinstance(node, A.Quant):
            for _ in range(node.low):
                gen(node.body, hidden)
            if node.high is None:
                head = emit(SPLIT)
                body = len(code)
                gen(node.body, hidden)
                emit(JMP, head)
                out = len(code)
                code[head][1:] = [body, out] if node.greedy else [out, body]
            else:
                splits = []
                for _ in range(node.high - node.low):
                    split = emit(SPLIT)
                    splits.append(split)
                    code[split][1] = len(code)  # the body, patched below for a reluctant quantifier
                    gen(node.body, hidden)
                out = len(code)
                for split in splits:
                    body = split + 1
                    code[split][1:] = [body, out] if node.greedy else [out, body]
        else:
            raise TypeError(f"not a row pattern: {node!r}")

    gen(pattern, False)
    emit(MATCH)
    array = np.array(code, dtype=np.int64).reshape(-1, 3)
    return Program(array[:, 0].copy(), array[:, 1].copy(), array[:, 2].copy(), tuple(variables))
