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
            if isinstance(node, ast.Name):
                if node.id not in known and node.id not in _FUNCTIONS | {"True": 1, "False": 0}:
                    raise ValueError(f"constraint {expression!r} names unknown knob {node.id!r}")
                names.add(node.id)
            elif isinstance(node, ast.Call):
                if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS:
                    raise ValueError(f"constraint {expression!r}: only min, max, abs are allowed")
            elif isinstance(node, ast.Attribute | ast.Subscript | ast.Lambda | ast.NamedExpr):
                raise ValueError(f"constraint {expression!r} uses a construct that is not allowed")
        return cls(expression, frozenset(names - set(_FUNCTIONS)), tree)

    def holds(self, config: Mapping[str, Any]) -> bool:
        tree = self._tree or ast.parse(self.expression, mode="eval")
        return bool(_evaluate(tree.body, config))


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
            return -_evaluate(operand, env)
        case ast.UnaryOp(op=ast.UAdd(), operand=operand):
            return +_evaluate(operand, env)
        case ast.BinOp(left=left, op=op, right=right) if type(op) in _BINARY:
            return _BINARY[type(op)](_evaluate(left, env), _evaluate(right, env))
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
