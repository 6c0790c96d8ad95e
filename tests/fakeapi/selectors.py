"""Label and field selectors, parsed and matched the way apimachinery's `labels` and `fields` do."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.fakeapi import errors

Obj = dict[str, Any]


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!", "gt", "lt"
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op in ("=", "in"):
            return present and value in self.values
        if self.op in ("!=", "notin"):
            return not present or value not in self.values
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if not present or value is None:
            return False
        try:
            number = int(value)
        except ValueError:
            return False
        limit = int(self.values[0])
        return number > limit if self.op == "gt" else number < limit


_TOKEN = re.compile(r"\s*(\(|\)|,|!=|==|=|!|<|>|[^\s(),!=<>]+)")


def _tokens(text: str) -> list[str]:
    tokens = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if not match:
            break
        if match.group(1):
            tokens.append(match.group(1))
        position = match.end()
        if text[position:].strip() == "":
            break
    return tokens


def _selector_error(detail: str) -> errors.ApiError:
    # As kube-apiserver words a bad `labelSelector` query parameter (labels.Parse, unwrapped).
    return errors.bad_request(f"unable to parse requirement: {detail}")


def parse_label_selector(text: str) -> list[Requirement]:
    """Parse `a=b,c!=d,e in (x,y),f notin (z),g,!h,i>3`; raises a 400 ApiError on bad syntax."""
    tokens = _tokens(text)
    requirements: list[Requirement] = []
    index = 0

    def expect_value() -> str:
        nonlocal index
        if index >= len(tokens) or tokens[index] in ("(", ")", ",", "=", "==", "!=", "!", "<", ">"):
            found = tokens[index] if index < len(tokens) else ""
            raise _selector_error(f"found '{found}', expected: identifier")
        index += 1
        return tokens[index - 1]

    while index < len(tokens):
        if tokens[index] == "!":
            index += 1
            key = expect_value()
            requirements.append(Requirement(key, "!"))
        else:
            key = expect_value()
            op = tokens[index] if index < len(tokens) else ","
            if op == ",":
                requirements.append(Requirement(key, "exists"))
            elif op in ("=", "==", "!="):
                index += 1
                value = ""
                if index < len(tokens) and tokens[index] not in (",",):
                    value = expect_value()
                requirements.append(Requirement(key, "!=" if op == "!=" else "=", (value,)))
            elif op in (">", "<"):
                index += 1
                value = expect_value()
                if not re.fullmatch(r"-?\d+", value):
                    raise _selector_error("for 'Gt', 'Lt' operators, the value must be an integer")
                requirements.append(Requirement(key, "gt" if op == ">" else "lt", (value,)))
            elif op in ("in", "notin"):
                index += 1
                if index >= len(tokens) or tokens[index] != "(":
                    found = tokens[index] if index < len(tokens) else ""
                    raise _selector_error(f"found '{found}' expected: '('")  # sic: no comma
                index += 1
                values: list[str] = []
                while index < len(tokens) and tokens[index] != ")":
                    if tokens[index] == ",":
                        index += 1
                        continue
                    values.append(tokens[index])
                    index += 1
                if index >= len(tokens):
                    raise _selector_error("found '', expected: ',' or ')'")
                index += 1
                requirements.append(Requirement(key, op, tuple(values)))
            else:
                raise _selector_error(f"found '{op}', expected: in, notin, =, ==, !=, gt, lt")
        if index < len(tokens):
            if tokens[index] != ",":
                raise _selector_error(f"found '{tokens[index]}', expected: ',' or 'end of string'")
            index += 1
            if index == len(tokens):
                raise errors.bad_request("found '', expected: identifier after ','")
    return requirements


def label_matcher(text: str | None) -> Callable[[Obj], bool]:
    if not text:
        return lambda obj: True
    requirements = parse_label_selector(text)

    def matches(obj: Obj) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        return all(r.matches(labels) for r in requirements)

    return matches


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    value: str
    negate: bool


def parse_field_selector(text: str) -> list[FieldRequirement]:
    requirements = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        for op, negate in (("!=", True), ("==", False), ("=", False)):
            if op in part:
                name, value = part.split(op, 1)
                requirements.append(FieldRequirement(name.strip(), value.strip(), negate))
                break
        else:
            raise errors.bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
    return requirements


def field_matcher(
    text: str | None, *, value_of: Callable[[Obj, str], str | None], default_conversion: bool
) -> Callable[[Obj], bool]:
    """Compile a field selector; unsupported field labels are a 400 like the real server's. Its wording depends
    on the kind (seen on v1.36.2): built-in kinds with only the metadata labels use apimachinery's default
    conversion (`"x" is not a known field selector: ...`), the others and custom resources say
    `field label not supported: x`."""
    if not text:
        return lambda obj: True
    requirements = parse_field_selector(text)
    probe: Obj = {"metadata": {}}
    for requirement in requirements:
        if value_of(probe, requirement.field) is None:
            if default_conversion:
                raise errors.bad_request(
                    f'"{requirement.field}" is not a known field selector: only "metadata.name", "metadata.namespace"'
                )
            raise errors.bad_request(f"field label not supported: {requirement.field}")

    def matches(obj: Obj) -> bool:
        for requirement in requirements:
            equal = value_of(obj, requirement.field) == requirement.value
            if equal == requirement.negate:
                return False
        return True

    return matches
