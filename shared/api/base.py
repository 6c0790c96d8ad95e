"""Base classes for API models: camelCase on the wire, strict about unknown fields."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


def wire_form(model: BaseModel) -> dict[str, Any]:
    """A model's wire form: `model.model_dump(mode="json", by_alias=True, exclude_none=True)`.

    Calls the model's serializer directly: `model_dump`'s own argument handling costs as much again as
    serializing a small model, and synthesis dumps dozens per ModelBooster.
    """
    wire: dict[str, Any] = model.__pydantic_serializer__.to_python(model, mode="json", by_alias=True, exclude_none=True)
    return wire


class ApiModel(BaseModel):
    """Wire form is `model_dump(by_alias=True, exclude_none=True)` (see `to_wire`)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        serialize_by_alias=True,
        extra="forbid",
        frozen=False,
        # Like the API server's schema validation: "1" is not an integer and "true" is not a boolean.
        strict=True,
    )

    def to_wire(self) -> dict[str, Any]:
        return wire_form(self)


class ObjectMeta(ApiModel):
    """The metadata fields we read; the rest of ObjectMeta passes through untouched."""

    model_config = ConfigDict(extra="allow")

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[dict[str, Any]] | None = None
    finalizers: list[str] | None = None


_QUALIFIED_NAME = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)


class Condition(ApiModel):
    """metav1.Condition."""

    type: str = Field(max_length=316, pattern=_QUALIFIED_NAME)
    status: Literal["True", "False", "Unknown"]
    reason: str = Field(min_length=1, max_length=1024, pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
    message: str = Field(max_length=32768)
    last_transition_time: str = Field(json_schema_extra={"format": "date-time"})
    observed_generation: int | None = Field(default=None, ge=0, json_schema_extra={"format": "int64"})
