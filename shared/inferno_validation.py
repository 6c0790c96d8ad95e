"""Parsing and cross-object validation of Inferno objects (one namespace's worth).

Field-level rules live on the models in `shared.api.inferno`; this module adds what only the whole set can
tell: duplicate names, and Servers that refer to accelerators, classes or models nobody defined. The reference
optimizer silently left such servers out of its solution; we report them by object and field instead.
Problems that cannot break a run (a perf entry for an accelerator that does not exist, capacity for a type no
accelerator has) are warnings.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from shared.api.inferno import (
    INFERNO_KINDS,
    Accelerator,
    Capacity,
    InfernoObject,
    Model,
    Server,
    ServiceClass,
)
from shared.decoding import render_location
from shared.errors import pydantic_detail_message
from shared.gotext import go_quote
from shared.schema import structural_schema
from shared.spelling import closest, did_you_mean


@dataclass(frozen=True, slots=True)
class InfernoIssue:
    """One problem, named the way `kubectl` shows the object: kind, metadata.name, field path."""

    kind: str
    name: str
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.kind} {self.name}: {self.path}: {self.message}"


@dataclass(frozen=True, slots=True)
class InfernoReport:
    errors: tuple[InfernoIssue, ...] = ()
    warnings: tuple[InfernoIssue, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.errors

    def summary(self) -> str:
        """One line per error, for a status message or an HTTP 400 body."""
        return "; ".join(str(issue) for issue in self.errors)


class InfernoObjectError(ValueError):
    """An object that does not fit its model; `issues` has one entry per field error."""

    def __init__(self, issues: Sequence[InfernoIssue]) -> None:
        self.issues = tuple(issues)
        super().__init__("; ".join(str(issue) for issue in self.issues))


_MODELS_BY_KIND: dict[str, type[BaseModel]] = {kind: model for kind, _plural, model in INFERNO_KINDS}


def issues_from_validation_error(*, kind: str, name: str, error: ValidationError) -> list[InfernoIssue]:
    """Pydantic errors as issues with dotted wire paths (`spec.data[0].alpha`), an unknown or missing field with
    the declared one it is likely a typo of (shared/spelling.py)."""
    issues = []
    model = _MODELS_BY_KIND.get(kind)
    for detail in error.errors():
        message = pydantic_detail_message(detail) + (_typo_hint(detail, model) if model is not None else "")
        issues.append(InfernoIssue(kind=kind, name=name, path=_dotted(detail["loc"]), message=message))
    return issues


def _typo_hint(detail: ErrorDetails, model: type[BaseModel]) -> str:
    loc = detail["loc"]
    if detail["type"] not in ("extra_forbidden", "missing") or not loc or not isinstance(loc[-1], str):
        return ""
    _, parent = render_location(loc[:-1], structural_schema(model))
    declared = list(parent.get("properties", {}))
    if detail["type"] == "extra_forbidden":
        meant = closest(loc[-1], declared)
        return f"; {did_you_mean(meant)}" if meant else ""
    holder = detail.get("input")
    for key in holder if isinstance(holder, Mapping) else ():
        if isinstance(key, str) and key not in declared and closest(key, declared) == loc[-1]:
            return f"; found {go_quote(key)}: {did_you_mean(loc[-1])}"
    return ""


def parse_inferno_object(obj: Mapping[str, Any]) -> InfernoObject:
    """Validate one object (e.g. from YAML) into its model, chosen by `kind`."""
    kind = obj.get("kind")
    metadata = obj.get("metadata")
    name = str(metadata.get("name", "<unnamed>")) if isinstance(metadata, Mapping) else "<unnamed>"
    if not isinstance(kind, str) or kind not in _MODELS_BY_KIND:
        known = ", ".join(sorted(_MODELS_BY_KIND))
        raise InfernoObjectError(
            [InfernoIssue(kind=str(kind), name=name, path="kind", message=f"not an Inferno kind; known: {known}")]
        )
    try:
        # Wire names only, as shared/decoding.py decodes: a snake_case key is unknown to the API server.
        parsed = _MODELS_BY_KIND[kind].model_validate(obj, by_alias=True, by_name=False)
    except ValidationError as error:
        raise InfernoObjectError(issues_from_validation_error(kind=kind, name=name, error=error)) from None
    return cast(InfernoObject, parsed)


def validate_inferno_objects(
    *,
    accelerators: Sequence[Accelerator],
    models: Sequence[Model],
    service_classes: Sequence[ServiceClass],
    servers: Sequence[Server],
    capacities: Sequence[Capacity] = (),
) -> InfernoReport:
    """Cross-object checks over one namespace's objects (each already valid on its own)."""
    report = _Collector()
    accelerator_names = _unique_names(
        report, kind="Accelerator", noun="accelerator", names=[(_name(a), a.spec.name) for a in accelerators]
    )
    model_names = _unique_names(report, kind="Model", noun="model", names=[(_name(m), m.spec.name) for m in models])
    _unique_names(
        report, kind="ServiceClass", noun="service class", names=[(_name(c), c.spec.name) for c in service_classes]
    )
    _unique_names(report, kind="Server", noun="server", names=[(_name(s), s.spec.name) for s in servers])

    accelerator_types = {a.spec.type for a in accelerators}
    # The first object of a duplicated name is the one that counts, as in the error message.
    models_by_name: dict[str, Model] = {}
    for model in models:
        models_by_name.setdefault(model.spec.name, model)
    classes_by_name: dict[str, ServiceClass] = {}
    for service_class in service_classes:
        classes_by_name.setdefault(service_class.spec.name, service_class)

    for model in models:
        for index, entry in enumerate(model.spec.data):
            if entry.acc not in accelerator_names:
                report.about("Model", _name(model)).warn(
                    f"spec.data[{index}].acc",
                    f"unknown accelerator {entry.acc!r}; this entry is ignored{_known(accelerator_names)}",
                )
    for service_class in service_classes:
        for index, target in enumerate(service_class.spec.data):
            if target.model not in model_names:
                report.about("ServiceClass", _name(service_class)).warn(
                    f"spec.data[{index}].model",
                    f"unknown model {target.model!r}; this target is unused{_known(model_names)}",
                )
    for server in servers:
        _check_server(
            report,
            server,
            accelerator_names=accelerator_names,
            models_by_name=models_by_name,
            classes_by_name=classes_by_name,
        )
    _check_capacities(report, capacities=capacities, accelerator_types=accelerator_types)
    return report.done()


def _check_server(
    report: _Collector,
    server: Server,
    *,
    accelerator_names: set[str],
    models_by_name: Mapping[str, Model],
    classes_by_name: Mapping[str, ServiceClass],
) -> None:
    about = report.about("Server", _name(server))
    spec = server.spec
    service_class = classes_by_name.get(spec.class_name)
    model = models_by_name.get(spec.model)
    if service_class is None:
        about.error("spec.class", f"unknown service class {spec.class_name!r}{_known(classes_by_name)}")
    if model is None:
        about.error("spec.model", f"unknown model {spec.model!r}{_known(models_by_name)}")
    if service_class is not None and model is not None:
        if all(target.model != spec.model for target in service_class.spec.data):
            about.error(
                "spec.model",
                f"service class {spec.class_name!r} has no SLO target for model {spec.model!r}",
            )
        if not any(entry.acc in accelerator_names for entry in model.spec.data):
            about.warn(
                "spec.model",
                f"model {spec.model!r} has no performance data for any known accelerator; nothing can host it",
            )
    for path, allocation in (("spec.currentAlloc", spec.current_alloc), ("spec.desiredAlloc", spec.desired_alloc)):
        if allocation is None or not allocation.accelerator or allocation.accelerator in accelerator_names:
            continue
        message = f"unknown accelerator {allocation.accelerator!r}{_known(accelerator_names)}"
        if path == "spec.currentAlloc":
            about.error(f"{path}.accelerator", message)
        else:  # our own output of an earlier run; the next run overwrites it
            about.warn(f"{path}.accelerator", message)


def _check_capacities(report: _Collector, *, capacities: Sequence[Capacity], accelerator_types: set[str]) -> None:
    owner_of_type: dict[str, str] = {}
    for capacity in capacities:
        for index, entry in enumerate(capacity.spec.count):
            path = f"spec.count[{index}].type"
            earlier = owner_of_type.get(entry.type)
            if earlier is not None:
                report.about("Capacity", _name(capacity)).warn(
                    path,
                    f"type {entry.type!r} is also counted by Capacity {earlier}; this later entry wins",
                )
            owner_of_type[entry.type] = _name(capacity)
            if entry.type not in accelerator_types:
                report.about("Capacity", _name(capacity)).warn(path, f"no accelerator has type {entry.type!r}")


def _unique_names(report: _Collector, *, kind: str, noun: str, names: Iterable[tuple[str, str]]) -> set[str]:
    first_owner: dict[str, str] = {}
    for object_name, spec_name in names:
        owner = first_owner.get(spec_name)
        if owner is not None:
            report.about(kind, object_name).error(
                "spec.name", f"duplicate {noun} name {spec_name!r} (also used by {kind} {owner})"
            )
            continue
        first_owner[spec_name] = object_name
    return set(first_owner)


@dataclass
class _Collector:
    errors: list[InfernoIssue] = field(default_factory=list)
    warnings: list[InfernoIssue] = field(default_factory=list)

    def about(self, kind: str, name: str) -> _About:
        return _About(self, kind, name)

    def done(self) -> InfernoReport:
        return InfernoReport(errors=tuple(self.errors), warnings=tuple(self.warnings))


@dataclass(frozen=True, slots=True)
class _About:
    """Issues about one object: only the field path and the message vary."""

    collector: _Collector
    kind: str
    name: str

    def error(self, path: str, message: str) -> None:
        self.collector.errors.append(InfernoIssue(kind=self.kind, name=self.name, path=path, message=message))

    def warn(self, path: str, message: str) -> None:
        self.collector.warnings.append(InfernoIssue(kind=self.kind, name=self.name, path=path, message=message))


def _name(obj: Accelerator | Model | ServiceClass | Server | Capacity) -> str:
    return obj.metadata.name or "<unnamed>"


def _known(names: Iterable[str]) -> str:
    listed = sorted(names)
    return f" (known: {', '.join(listed)})" if listed else " (none defined)"


def _dotted(location: tuple[int | str, ...]) -> str:
    path = ""
    for part in location:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else part
    return path or "<root>"
