"""Constraints between knobs, written as expressions such as `max_conn >= threads * 64`.

Expressions are parsed once into a Python AST and evaluated by a small interpreter that knows only
arithmetic, comparisons, boolean logic and knob names: nothing in a project file can run code."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hone.errors import HoneError


def _power(base: Any, exponent: Any) -> float:
    """`**` in floating point: an integer power such as `k ** 99999999` would take minutes."""
    try:
        return float(base) ** float(exponent)
    except OverflowError:
        return math.inf
    except ZeroDivisionError:
        return math.nan


_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: _power,
}
_COMPARE: dict[type, Callable[[Any, Any], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {"min": min, "max": max, "abs": abs}
#: How many arguments each function takes (at least, at most).
_ARITY = {"min": (2, None), "max": (2, None), "abs": (1, 1)}
_UNARY = (ast.Not, ast.USub, ast.UAdd)
#: Everything else a parsed expression may hold: its operators and the nodes that carry them.
_ALLOWED = (
    ast.Expression, ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.IfExp, ast.Call,
    ast.Name, ast.Constant, ast.Tuple, ast.List, ast.Set, ast.Load, ast.And, ast.Or,
    *_BINARY, *_UNARY, *_COMPARE,
)  # fmt: skip
_SYMBOLS = {ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|", ast.BitAnd: "&", ast.BitXor: "^",
            ast.Invert: "~", ast.MatMult: "@", ast.Is: "is", ast.IsNot: "is not"}  # fmt: skip


class ConstraintError(HoneError, ValueError):
    """A constraint that cannot be computed for a configuration: arithmetic on a knob's text
    (`word * 99999999999` would build a string of 100 GB), a comparison of text with a number."""


def _shown(node: ast.AST) -> str:
    """A construct a constraint may not use, as it was written."""
    if type(node) in _SYMBOLS:
        return repr(_SYMBOLS[type(node)])
    if isinstance(node, ast.expr):
        return repr(ast.unparse(node))
    return type(node).__name__


def _number(value: Any) -> Any:
    if isinstance(value, bool | int | float):
        return value
    raise ConstraintError(f"{value!r} is not a number")


@dataclass(frozen=True)
class Constraint:
    """A boolean expression over knob names that every tried configuration must satisfy."""

    expression: str
    names: frozenset[str] = field(default=frozenset(), compare=False)
    _tree: ast.Expression | None = field(default=None, compare=False, repr=False)

    @classmethod
    def parse(cls, expression: str, known: set[str]) -> Constraint:
        """Parse and check that only known knob names and allowed operations appear."""
        try:
            tree = ast.parse(expression, mode="eval")
        except SyntaxError as exc:
            raise ValueError(f"cannot parse constraint {expression!r}: {exc.msg}") from None
        names: set[str] = set()
        for node in ast.walk(tree):
            if not isinstance(node, _ALLOWED) or (
                isinstance(node, ast.Constant) and type(node.value) not in (int, float, str, bool)
            ):
                raise ValueError(f"constraint {expression!r}: {_shown(node)} is not allowed")
            if isinstance(node, ast.Name):
                if node.id not in known and node.id not in _FUNCTIONS | {"True": 1, "False": 0}:
                    raise ValueError(f"constraint {expression!r} names unknown knob {node.id!r}")
                names.add(node.id)
            elif isinstance(node, ast.Call):
                if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS:
                    raise ValueError(f"constraint {expression!r}: only min, max, abs are allowed")
                least, most = _ARITY[node.func.id]
                count = len(node.args)
                if node.keywords or count < least or (most is not None and count > most):
                    takes = "one argument" if most == 1 else f"{least} or more arguments"
                    raise ValueError(
                        f"constraint {expression!r}: {node.func.id}() takes {takes}"
                        + (", no keywords" if node.keywords else "")
                    )
        return cls(expression, frozenset(names - set(_FUNCTIONS)), tree)

    def holds(self, config: Mapping[str, Any]) -> bool:
        """Whether the configuration satisfies it; one it cannot be computed for (a division
        by zero at these values) does not. ConstraintError for one that could hold for no
        configuration: its arithmetic or comparison mixes text and numbers."""
        tree = self._tree or ast.parse(self.expression, mode="eval")
        try:
            return bool(_evaluate(tree.body, config))
        except ArithmeticError:
            return False
        except TypeError as exc:  # `word > 3`, `abs(word)`
            raise ConstraintError(f"constraint {self.expression!r}: {exc}") from None
        except ConstraintError as exc:
            raise ConstraintError(f"constraint {self.expression!r}: {exc}") from None


def _evaluate(node: ast.AST, env: Mapping[str, Any]) -> Any:
    match node:
        case ast.Constant(value=value):
            return value
        case ast.Name(id=name):
            if name in _FUNCTIONS:
                return _FUNCTIONS[name]
            if name in ("True", "False"):
                return name == "True"
            return env[name]
        case ast.UnaryOp(op=ast.Not(), operand=operand):
            return not _evaluate(operand, env)
        case ast.UnaryOp(op=ast.USub(), operand=operand):
            return -_number(_evaluate(operand, env))
        case ast.UnaryOp(op=ast.UAdd(), operand=operand):
            return +_number(_evaluate(operand, env))
        case ast.BinOp(left=left, op=op, right=right) if type(op) in _BINARY:
            return _BINARY[type(op)](_number(_evaluate(left, env)), _number(_evaluate(right, env)))
        case ast.BoolOp(op=ast.And(), values=values):
            return all(_evaluate(v, env) for v in values)
        case ast.BoolOp(op=ast.Or(), values=values):
            return any(_evaluate(v, env) for v in values)
        case ast.Compare(left=left, ops=ops, comparators=comparators):
            current = _evaluate(left, env)
            for op, comparator in zip(ops, comparators, strict=True):
                other = _evaluate(comparator, env)
                if type(op) not in _COMPARE or not _COMPARE[type(op)](current, other):
                    return False
                current = other
            return True
        case ast.IfExp(test=test, body=body, orelse=orelse):
            return _evaluate(body if _evaluate(test, env) else orelse, env)
        case ast.Tuple(elts=elts) | ast.List(elts=elts) | ast.Set(elts=elts):
            return tuple(_evaluate(e, env) for e in elts)
        case ast.Call(func=func, args=args):
            return _evaluate(func, env)(*(_evaluate(a, env) for a in args))
    raise ValueError(f"unsupported expression: {ast.dump(node)[:60]}")
