"""JSON values as the API server reads them, decided in native code (pydantic-core) for the common input.

Every admission request decodes a ModelBooster, with a dozen integers and a free-form engine config per
worker: a Python call per value (a validator, a union's discriminator) was a good part of the decoding.

- `JsonInteger`: `3.0` (or YAML's `1e6`) is an integer to the API server, so it is to us. Booleans, fractions
  and strings are not integers, and are refused as `int_type` with the input as given. Only numbers other
  than ints reach Python.
- `AnyJson`: any JSON value, as pydantic's `JsonValue` takes it, without its Python discriminator. It refuses a
  value once, as a whole (`NOT_JSON`); `not_json_details` has `JsonValue` say where and why.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, cast

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler, JsonValue, TypeAdapter, ValidationError
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import ErrorDetails, core_schema

# The error type AnyJson refuses a value with, JsonValue's own.
NOT_JSON: Final = "invalid-json-value"


def integral_float(value: object) -> int:
    """An integral float as the integer it is; anything else is refused (a union's fallback member: the union
    reports the refusal in its own words)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise ValueError("not an integral number")


@dataclass(frozen=True)
class JsonInteger:
    """`Annotated[int, ..., JsonInteger()]`: the int, integral floats included, decided in native code.

    It must come last: a bound given after it (`Field(ge=0)` on `Annotated[int, JsonInteger()] | None`) is
    checked by pydantic in Python. Bounds given before it (in the same `Annotated`) are the int schema's own;
    `ge` and `le` given here are checked in native code too, and described to the JSON schema as pydantic
    describes a bound it checks around a validator (its own `ge`/`le` spelling), as they were when these
    bounds were `Field` bounds of an optional field.
    """

    ge: int | None = None
    le: int | None = None

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        declared = handler(source)
        if declared["type"] != "int":
            raise TypeError(f"JsonInteger applies to an int schema, not to {declared['type']!r}")
        number = core_schema.union_schema(
            [core_schema.int_schema(strict=True), core_schema.no_info_plain_validator_function(integral_float)],
            mode="left_to_right",
            # One error, as a strict int gives it: the fallback's own error would only repeat it.
            custom_error_type="int_type",
        )
        bounds = {key: value for key, value in (("ge", self.ge), ("le", self.le)) if value is not None}
        described = {key: value for key, value in declared.items() if key != "metadata"}
        checked: dict[str, Any] = {**described, "strict": True}
        for key, pick in (("ge", max), ("le", min)):
            if key in bounds:
                checked[key] = pick(bounds[key], checked.get(key, bounds[key]))
        metadata: dict[str, Any] = dict(declared.get("metadata") or {})
        if bounds:
            metadata["pydantic_js_updates"] = {**metadata.get("pydantic_js_updates", {}), **bounds}

        def json_schema(_schema: core_schema.CoreSchema, json_handler: GetJsonSchemaHandler) -> JsonSchemaValue:
            return json_handler(cast(core_schema.IntSchema, described))

        metadata["pydantic_js_functions"] = [json_schema]
        return core_schema.chain_schema([number, cast(core_schema.IntSchema, checked)], metadata=metadata)


class _AnyJson:
    """The runtime type of `AnyJson` (`JsonValue` to type checkers)."""

    @classmethod
    def __get_pydantic_core_schema__(cls, _source: Any, _handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        """Each JSON kind is tried in turn, most common first (an object at the top, a string within) and an
        int before a float, which would take it too: a union member that fails costs about as much as one that
        succeeds. Containers are copied, as `JsonValue` copies them. A value JSON cannot hold (only a Python
        caller can pass one) or nested past pydantic-core's depth limit is refused once, for the whole value:
        `not_json_details` says where and why."""
        refused: dict[str, Any] = {
            "custom_error_type": NOT_JSON,
            "custom_error_message": "input was not a valid JSON value",
        }
        value = core_schema.definition_reference_schema(_REF)
        kinds = core_schema.union_schema(
            [
                core_schema.str_schema(strict=True),
                core_schema.int_schema(strict=True),
                core_schema.float_schema(strict=True),
                core_schema.bool_schema(strict=True),
                core_schema.none_schema(),
                core_schema.dict_schema(core_schema.str_schema(strict=True), value, strict=True),
                core_schema.list_schema(value, strict=True),
            ],
            mode="left_to_right",
            ref=_REF,
            **refused,
        )
        top = core_schema.union_schema(
            [core_schema.dict_schema(core_schema.str_schema(strict=True), value, strict=True), value],
            mode="left_to_right",
            **refused,
        )
        # Parsed JSON holds JSON values only, as with `JsonValue`.
        either = core_schema.json_or_python_schema(
            json_schema=core_schema.any_schema(),
            python_schema=top,
            serialization=core_schema.simple_ser_schema("any"),
        )
        return core_schema.definitions_schema(either, [kinds])

    @classmethod
    def __get_pydantic_json_schema__(
        cls, _schema: core_schema.CoreSchema, _handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {}  # any value, as `JsonValue`'s


_REF = f"{__name__}.AnyJson"

if TYPE_CHECKING:
    AnyJson = JsonValue
else:
    AnyJson = _AnyJson


def not_json_details(value: object) -> list[ErrorDetails]:
    """Where and why `JsonValue` refuses a value that AnyJson refused (relative to the value; empty if it
    takes it). Its errors are those of the refused value's every bad part: for errors only, it runs the Python
    discriminator for every value."""
    try:
        _json_value().validate_python(value)
    except ValidationError as error:
        return error.errors(include_url=False)
    return []


@functools.cache
def _json_value() -> TypeAdapter[JsonValue]:
    return TypeAdapter(JsonValue)
