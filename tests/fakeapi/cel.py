"""A small subset of CEL for CRD `x-kubernetes-validations` rules.

Supported: the variables `self` and `oldSelf`; field selection (`self.a.b`, `self['a-b']`); indexing of
lists and maps; `has(self.a.b)`; `size(x)` and `x.size()`; `x in list` / `k in map`; the macros
`all`, `exists`, `exists_one`, `map` and `filter`; literals (strings, integers, floats, true, false, null,
lists); `!`, unary `-`, `==`, `!=`, `<`, `<=`, `>`, `>=`, `+`, `-`, `&&`, `||` and `? :`; and the optional
`oldSelf` of rules with `optionalOldSelf: true` (`oldSelf.hasValue()`, `oldSelf.value()`,
`oldSelf.orValue(x)`). This covers the shapes our CRDs use: `!has(self.x)`, `self == oldSelf`,
`has(self.a) != has(self.b)`, `!has(oldSelf.x) || has(self.x)`, `size(self.x) > 0`,
`self.all(x, self.exists_one(y, y.name == x.name))`,
`!has(self.x) || (oldSelf.hasValue() && has(oldSelf.value().x))`.

Equality follows what kube-apiserver v1.36 did, not the CEL specification: a value that holds a subtree
declared `x-kubernetes-preserve-unknown-fields` (a `FreeForm` map here) never equals anything, not even an
unchanged copy of itself, so `oldSelf == self` over such a value is false.

Anything else (string functions, `matches`, timestamps, `optional.of`, `.?x`, `messageExpression`, ...) does
not parse; such a rule is *ignored* by the fake (see tests/fakeapi/__init__.py), never guessed at.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from typing import Any, Final

from tests.fakeapi.util import json_equal

Obj = dict[str, Any]


class CelSyntaxError(ValueError):
    """The rule uses CEL beyond the supported subset."""


class CelEvalError(ValueError):
    """The rule failed at run time (for example `no such key: x`)."""


@dataclass(frozen=True)
class OptionalValue:
    """A CEL optional: `oldSelf` of a rule with `optionalOldSelf: true`."""

    present: bool
    value: Any = None


NONE: Final = OptionalValue(False)


class FreeForm(dict[str, Any]):
    """A map whose schema says `x-kubernetes-preserve-unknown-fields`: CEL equality never holds over it."""


def contains_free_form(value: Any) -> bool:
    if isinstance(value, FreeForm):
        return True
    if isinstance(value, dict):
        return any(contains_free_form(v) for v in value.values())
    if isinstance(value, list):
        return any(contains_free_form(v) for v in value)
    return False


_TOKEN_RE: Final = re.compile(
    r"""
    \s*(?:
      (?P<float>\d+\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)
    | (?P<int>\d+)
    | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
    | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<op>==|!=|<=|>=|&&|\|\||[!<>+\-*/%.()\[\],?:])
    )""",
    re.VERBOSE,
)


@dataclass(frozen=True)
class Token:
    kind: str
    text: str


def tokenize(source: str) -> list[Token]:
    tokens: list[Token] = []
    position = 0
    while position < len(source):
        if source[position:].strip() == "":
            break
        match = _TOKEN_RE.match(source, position)
        if not match or match.end() == position:
            raise CelSyntaxError(f"unexpected character at {position}: {source[position : position + 10]!r}")
        kind = match.lastgroup or ""
        tokens.append(Token(kind, match.group(kind)))
        position = match.end()
    tokens.append(Token("end", ""))
    return tokens


def _unquote(text: str) -> str:
    body = text[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t", "r": "\r"}.get(m.group(1), m.group(1)), body)


# AST nodes are tuples: (op, *operands).
Node = tuple[Any, ...]
_MACROS: Final = frozenset({"all", "exists", "exists_one", "map", "filter"})
# Methods of optionals -> how many arguments they take.
_OPTIONAL_METHODS: Final = {"hasValue": 0, "value": 0, "orValue": 1}


class _Parser:
    def __init__(self, source: str) -> None:
        self.tokens = tokenize(source)
        self.index = 0
        self.bound: set[str] = set()

    def peek(self) -> Token:
        return self.tokens[self.index]

    def take(self, text: str | None = None) -> Token:
        token = self.tokens[self.index]
        if text is not None and token.text != text:
            raise CelSyntaxError(f"expected {text!r}, found {token.text!r}")
        self.index += 1
        return token

    def parse(self) -> Node:
        node = self.conditional()
        if self.peek().kind != "end":
            raise CelSyntaxError(f"unexpected {self.peek().text!r}")
        return node

    def conditional(self) -> Node:
        node = self.or_()
        if self.peek().text == "?":
            self.take("?")
            then = self.conditional()
            self.take(":")
            otherwise = self.conditional()
            return ("?:", node, then, otherwise)
        return node

    def or_(self) -> Node:
        node = self.and_()
        while self.peek().text == "||":
            self.take()
            node = ("||", node, self.and_())
        return node

    def and_(self) -> Node:
        node = self.relation()
        while self.peek().text == "&&":
            self.take()
            node = ("&&", node, self.relation())
        return node

    def relation(self) -> Node:
        node = self.addition()
        while self.peek().text in ("==", "!=", "<", "<=", ">", ">=") or (
            self.peek().kind == "ident" and self.peek().text == "in"
        ):
            op = self.take().text
            node = (op, node, self.addition())
        return node

    def addition(self) -> Node:
        node = self.unary()
        while self.peek().text in ("+", "-"):
            op = self.take().text
            node = (op, node, self.unary())
        return node

    def unary(self) -> Node:
        if self.peek().text == "!":
            self.take()
            return ("!", self.unary())
        if self.peek().text == "-":
            self.take()
            return ("neg", self.unary())
        return self.postfix()

    def postfix(self) -> Node:
        node = self.primary()
        while True:
            if self.peek().text == ".":
                self.take()
                name = self.take()
                if name.kind != "ident":
                    raise CelSyntaxError(f"expected a field name, found {name.text!r}")
                if self.peek().text == "(":
                    self.take("(")
                    if name.text == "size":
                        self.take(")")
                        node = ("size", node)
                    elif name.text in _OPTIONAL_METHODS:
                        arguments = self.expressions(until=")")
                        if len(arguments) != _OPTIONAL_METHODS[name.text]:
                            raise CelSyntaxError(f"{name.text}() takes {_OPTIONAL_METHODS[name.text]} argument(s)")
                        node = ("optional", name.text, node, *arguments)
                    elif name.text in _MACROS:
                        variable = self.take()
                        if variable.kind != "ident":
                            raise CelSyntaxError(f"{name.text}() needs a variable name")
                        self.take(",")
                        self.bound.add(variable.text)
                        body = self.conditional()
                        self.bound.discard(variable.text)
                        self.take(")")
                        node = ("macro", name.text, node, variable.text, body)
                    else:
                        raise CelSyntaxError(f"unsupported function {name.text}()")
                else:
                    node = ("select", node, name.text)
            elif self.peek().text == "[":
                self.take()
                key = self.conditional()
                self.take("]")
                node = ("index", node, key)
            else:
                return node

    def expressions(self, *, until: str) -> list[Node]:
        """A comma-separated list of expressions and its closing token (list literals, call arguments)."""
        found: list[Node] = []
        while self.peek().text != until:
            found.append(self.conditional())
            if self.peek().text != ",":
                break
            self.take(",")
        self.take(until)
        return found

    def primary(self) -> Node:
        token = self.take()
        if token.kind == "int":
            return ("lit", int(token.text))
        if token.kind == "float":
            return ("lit", float(token.text))
        if token.kind == "string":
            return ("lit", _unquote(token.text))
        if token.text == "(":
            node = self.conditional()
            self.take(")")
            return node
        if token.text == "[":
            return ("list", *self.expressions(until="]"))
        if token.kind == "ident":
            if token.text in ("true", "false"):
                return ("lit", token.text == "true")
            if token.text == "null":
                return ("lit", None)
            if token.text in ("self", "oldSelf") or token.text in self.bound:
                return ("var", token.text)
            if token.text == "has":
                self.take("(")
                target = self.postfix()
                self.take(")")
                if target[0] != "select":
                    raise CelSyntaxError("has() needs a field selection")
                return ("has", target)
            if token.text == "size":
                self.take("(")
                target = self.conditional()
                self.take(")")
                return ("size", target)
            raise CelSyntaxError(f"unsupported identifier {token.text!r}")
        raise CelSyntaxError(f"unexpected {token.text!r}")


@functools.lru_cache(maxsize=1024)
def compile_rule(source: str) -> Node:
    """Parse a rule; raises CelSyntaxError when it is outside the supported subset. Programs are immutable
    tuples, kept per source text like kube-apiserver compiles a CRD's rules once, not on every write (parsing
    them per write was a sixth of the fake's CPU for a ModelBooster create)."""
    return _Parser(source).parse()


def uses_old_self(node: Node) -> bool:
    if node[0] == "var":
        return bool(node[1] == "oldSelf")
    return any(isinstance(child, tuple) and uses_old_self(child) for child in node[1:])


def _macro(node: Node, variables: dict[str, Any]) -> Any:
    _, name, target_node, variable, body = node
    target = evaluate(target_node, variables)
    if isinstance(target, dict):
        items: list[Any] = list(target)
    elif isinstance(target, list):
        items = target
    else:
        raise CelEvalError("no such overload")
    results: list[Any] = []
    failure: CelEvalError | None = None
    for item in items:
        try:
            results.append(evaluate(body, {**variables, variable: item}))
        except CelEvalError as err:
            if name in ("map", "filter"):
                raise
            failure = failure or err
            results.append(err)
    if name == "map":
        return results
    if any(not isinstance(r, (bool, CelEvalError)) for r in results):
        raise CelEvalError("no such overload")
    if name == "filter":
        return [item for item, keep in zip(items, results, strict=True) if keep is True]
    if name == "all" and any(r is False for r in results):
        return False
    if name == "exists" and any(r is True for r in results):
        return True
    if failure is not None:
        raise failure
    if name == "all":
        return True
    if name == "exists":
        return False
    return sum(1 for r in results if r is True) == 1


def _type_name(value: Any) -> str:
    if value is None:
        return "null_type"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, OptionalValue):
        return "optional_type"
    return "map"


def evaluate(node: Node, variables: dict[str, Any]) -> Any:
    op = node[0]
    if op == "lit":
        return node[1]
    if op == "var":
        return variables[node[1]]
    if op == "list":
        return [evaluate(child, variables) for child in node[1:]]
    if op == "select":
        target = evaluate(node[1], variables)
        if not isinstance(target, dict):
            raise CelEvalError(f"no such key: {node[2]}")
        if node[2] not in target:
            raise CelEvalError(f"no such key: {node[2]}")
        return target[node[2]]
    if op == "index":
        target = evaluate(node[1], variables)
        key = evaluate(node[2], variables)
        if isinstance(target, dict) and isinstance(key, str):
            if key not in target:
                raise CelEvalError(f"no such key: {key}")
            return target[key]
        if isinstance(target, list) and isinstance(key, int) and not isinstance(key, bool):
            if not 0 <= key < len(target):
                raise CelEvalError(f"index out of bounds: {key}")
            return target[key]
        raise CelEvalError("no such overload")
    if op == "macro":
        return _macro(node, variables)
    if op == "optional":
        return _optional(node, variables)
    if op == "has":
        _, target_node, field_name = node[1]
        target = evaluate(target_node, variables)
        if not isinstance(target, dict):
            raise CelEvalError("no such overload")
        return field_name in target
    if op == "size":
        target = evaluate(node[1], variables)
        if isinstance(target, (str, list, dict)):
            return len(target)
        raise CelEvalError("no such overload")
    if op == "!":
        value = evaluate(node[1], variables)
        if not isinstance(value, bool):
            raise CelEvalError("no such overload")
        return not value
    if op == "neg":
        value = evaluate(node[1], variables)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise CelEvalError("no such overload")
        return -value
    if op == "?:":
        condition = evaluate(node[1], variables)
        if not isinstance(condition, bool):
            raise CelEvalError("no such overload")
        return evaluate(node[2] if condition else node[3], variables)
    if op in ("&&", "||"):
        return _logic(op, node, variables)
    left = evaluate(node[1], variables)
    right = evaluate(node[2], variables)
    if op == "==":
        return _equal(left, right)
    if op == "!=":
        return not _equal(left, right)
    if op == "in":
        if isinstance(right, list):
            return any(_equal(left, item) for item in right)
        if isinstance(right, dict):
            return left in right
        raise CelEvalError("no such overload")
    if op in ("<", "<=", ">", ">="):
        return _compare(op, left, right)
    if op in ("+", "-"):
        return _arith(op, left, right)
    raise CelSyntaxError(f"unknown operator {op}")


def _optional(node: Node, variables: dict[str, Any]) -> Any:
    _, method, target_node, *arguments = node
    target = evaluate(target_node, variables)
    if not isinstance(target, OptionalValue):
        raise CelEvalError("no such overload")
    if method == "hasValue":
        return target.present
    if method == "value":
        if not target.present:
            raise CelEvalError("optional.none() dereference")
        return target.value
    return target.value if target.present else evaluate(arguments[0], variables)


def _logic(op: str, node: Node, variables: dict[str, Any]) -> bool:
    # CEL's && and || are commutative with respect to errors: an error on one side is absorbed when the
    # other side decides the result.
    results: list[bool | CelEvalError] = []
    for child in node[1:]:
        try:
            value = evaluate(child, variables)
        except CelEvalError as err:
            results.append(err)
            continue
        if not isinstance(value, bool):
            results.append(CelEvalError("no such overload"))
            continue
        if (op == "&&" and value is False) or (op == "||" and value is True):
            return value
        results.append(value)
    for result in results:
        if isinstance(result, CelEvalError):
            raise result
    return op == "&&"


def _equal(left: Any, right: Any) -> bool:
    if contains_free_form(left) or contains_free_form(right):
        return False
    numbers = (int, float)
    left_number = isinstance(left, numbers) and not isinstance(left, bool)
    right_number = isinstance(right, numbers) and not isinstance(right, bool)
    if left_number and right_number:
        return bool(left == right)
    if _type_name(left) != _type_name(right) and not (left is None or right is None):
        raise CelEvalError("no such overload")
    if isinstance(left, OptionalValue) and isinstance(right, OptionalValue):
        return left.present == right.present and (not left.present or _equal(left.value, right.value))
    return json_equal(left, right)


def _compare(op: str, left: Any, right: Any) -> bool:
    numbers = (int, float)
    both_numbers = all(isinstance(x, numbers) and not isinstance(x, bool) for x in (left, right))
    both_strings = isinstance(left, str) and isinstance(right, str)
    if not (both_numbers or both_strings):
        raise CelEvalError("no such overload")
    if op == "<":
        return bool(left < right)
    if op == "<=":
        return bool(left <= right)
    if op == ">":
        return bool(left > right)
    return bool(left >= right)


def _arith(op: str, left: Any, right: Any) -> Any:
    if isinstance(left, str) and isinstance(right, str) and op == "+":
        return left + right
    if isinstance(left, list) and isinstance(right, list) and op == "+":
        return left + right
    numbers = (int, float)
    if all(isinstance(x, numbers) and not isinstance(x, bool) for x in (left, right)):
        return left + right if op == "+" else left - right
    raise CelEvalError("no such overload")


# ---- static cost estimate (checked when a CRD is created) ------------------------------------------

PER_CALL_LIMIT: Final = 1_000_000
CRD_COST_LIMIT: Final = 100_000_000
# apiextensions estimates unbounded sizes from the largest request body kube-apiserver accepts.
MAX_REQUEST_BYTES: Final = 3 * 1024 * 1024


def _min_serialized_size(schema: Obj) -> int:
    kind = schema.get("type")
    if kind == "string":
        return 2  # ""
    if kind in ("integer", "number"):
        return 1
    if kind == "boolean":
        return 4
    return 2  # {} or []


def max_items(schema: Obj) -> int:
    """How many elements a list or map may hold, bounded or estimated like apiextensions does."""
    explicit = schema.get("maxItems", schema.get("maxProperties"))
    if isinstance(explicit, int):
        return explicit
    element = schema.get("items") or schema.get("additionalProperties") or {}
    element = element if isinstance(element, dict) else {}
    return (MAX_REQUEST_BYTES - 2) // (_min_serialized_size(element) + 1)


def value_size(schema: Obj) -> int:
    """Estimated worst-case traversal size of a value of this schema (cost units of an equality)."""
    kind = schema.get("type")
    if schema.get("x-kubernetes-int-or-string"):
        kind = "string"
    if kind == "string":
        max_length = schema.get("maxLength")
        length = max_length if isinstance(max_length, int) else MAX_REQUEST_BYTES - 2
        return math.ceil(length * 0.1) + 1
    if kind == "array":
        items = schema.get("items") if isinstance(schema.get("items"), dict) else {}
        return max_items(schema) * value_size(items or {}) + 1
    if kind == "object":
        if isinstance(schema.get("additionalProperties"), dict):
            return max_items(schema) * value_size(schema["additionalProperties"]) + 1
        properties = schema.get("properties") or {}
        if not properties and schema.get("x-kubernetes-preserve-unknown-fields"):
            return MAX_REQUEST_BYTES // 10
        return sum(value_size(p) for p in properties.values()) + 1
    return 1


def _schema_at(node: Node, env: dict[str, Obj | None]) -> Obj | None:
    if node[0] == "var":
        return env.get(node[1])
    if node[0] == "select":
        parent = _schema_at(node[1], env)
        if parent is None:
            return None
        properties = parent.get("properties") or {}
        if node[2] in properties:
            found: Obj = properties[node[2]]
            return found
        extra = parent.get("additionalProperties")
        return extra if isinstance(extra, dict) else None
    if node[0] == "optional" and node[1] in ("value", "orValue"):
        return _schema_at(node[2], env)
    if node[0] == "index":
        parent = _schema_at(node[1], env)
        if parent is None:
            return None
        element = parent.get("items") or parent.get("additionalProperties")
        return element if isinstance(element, dict) else None
    return None


def estimate_cost(node: Node, schema: Obj, env: dict[str, Obj | None] | None = None) -> int:
    """A rough static cost: 1 per operation, the traversal size of compared values, loops times their size."""
    env = env if env is not None else {"self": schema, "oldSelf": schema}
    op = node[0]
    if op == "macro":
        _, _, target_node, variable, body = node
        target = _schema_at(target_node, env) or {}
        element = target.get("items") or target.get("additionalProperties") or {}
        inner = estimate_cost(body, schema, {**env, variable: element if isinstance(element, dict) else {}})
        return estimate_cost(target_node, schema, env) + max_items(target) * (inner + 1)
    own = 1
    if op in ("==", "!=", "in"):
        sizes = [value_size(s) for s in (_schema_at(child, env) for child in node[1:3]) if s is not None]
        own = max(sizes, default=1)
    children = sum(estimate_cost(child, schema, env) for child in node[1:] if isinstance(child, tuple))
    return own + children
