"""JSON in and out as the reference's clients expect it: Go's number printing, `{"message": reason}` for an
error, and a request body that is refused with 400 and the reason when it is not the model asked for."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from aiohttp import web
from pydantic import BaseModel, ValidationError

from shared.errors import pydantic_detail_message

_Model = TypeVar("_Model", bound=BaseModel)


class BadRequest(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _go_numbers(value: Any) -> Any:
    """Integral floats as integers (46, not 46.0), as Go prints its float32s."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {key: _go_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_go_numbers(item) for item in value]
    return value


def reply(data: Any, *, status: int = 200) -> web.Response:
    return web.Response(text=json.dumps(_go_numbers(data), indent=4), status=status, content_type="application/json")


def message(status: int, text: str) -> web.Response:
    return reply({"message": text}, status=status)


async def body(request: web.Request, model: type[_Model]) -> _Model:
    raw = await request.read()
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BadRequest(f"body is not valid JSON: {error}") from None
    if not isinstance(data, dict):
        raise BadRequest(f"body must be a JSON object, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise BadRequest(_validation_message(error)) from None


def _validation_message(error: ValidationError) -> str:
    parts = []
    for detail in error.errors():
        path = ".".join(str(part) for part in detail["loc"]) or "body"
        parts.append(f"{path}: {pydantic_detail_message(detail)}")
    return "; ".join(parts)
