"""``calculate``: exact arithmetic for the MoFA demo scenario ("还有计算 25 * 4").

Models are poor at arithmetic and ``eval`` is a remote-code hole, so this walks
the expression's syntax tree and allows numbers, + - * / // % ** and brackets
only, with a cap on exponents so "9**9**9" cannot hang the process.
"""

from __future__ import annotations

import ast
import operator
from typing import Any

from reach_core import InvalidArguments, connector

_BINARY: dict[type[ast.operator], Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Any] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_EXAMPLE = "(25 * 4) / 2"


def evaluate(expression: str) -> int | float:
    """The value of an arithmetic expression; InvalidArguments for anything else."""
    text = expression.replace("×", "*").replace("÷", "/").replace("^", "**").strip()
    if not text or len(text) > 200:
        raise InvalidArguments(
            "expression", "an arithmetic expression of at most 200 characters", _EXAMPLE
        )
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise InvalidArguments(
            "expression", "numbers with + - * / // % ** and brackets", _EXAMPLE
        ) from None

    def walk(node: ast.AST) -> int | float:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, int | float)
            and not isinstance(node.value, bool)
        ):
            return node.value
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](walk(node.operand))
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left, right = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.Pow) and (abs(right) > 100 or abs(left) > 1e6):
                raise InvalidArguments(
                    "expression", "powers with an exponent of at most 100", "2 ** 10"
                )
            if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)) and right == 0:
                raise InvalidArguments("expression", "no division by zero", _EXAMPLE)
            return _BINARY[type(node.op)](left, right)
        raise InvalidArguments(
            "expression", "numbers with + - * / // % ** and brackets only", _EXAMPLE
        )

    value = walk(tree)
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


@connector(risk="read", tags=["computation"])
def calculate(expression: str) -> dict[str, Any]:
    """Calculate an arithmetic expression exactly. Use it for any arithmetic
    instead of computing in your head. 计算算术表达式（加减乘除、乘方、括号）。

    Args:
        expression: the expression, e.g. "25 * 4" or "(3 + 4.5) / 2"
    """
    return {"expression": expression, "result": evaluate(expression)}
