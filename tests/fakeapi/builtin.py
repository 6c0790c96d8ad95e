"""Built-in kinds the fake serves, with the parts of their registry strategies our tests rely on.

Kinds: core/v1 namespaces, configmaps, secrets, pods, events; events.k8s.io/v1 events (same storage as
core events, converted field by field); coordination.k8s.io/v1 leases; admissionregistration.k8s.io/v1
mutating and validating webhook configurations; apiextensions.k8s.io/v1 customresourcedefinitions.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, ClassVar, Final

from tests.fakeapi import errors as e
from tests.fakeapi import meta, typed
from tests.fakeapi.errors import FieldError
from tests.fakeapi.resources import ResourceInfo, Strategy, VersionInfo
from tests.fakeapi.util import deep_copy

Obj = dict[str, Any]

_CONFIG_KEY = re.compile(r"[-._a-zA-Z0-9]+")
MAX_CONFIG_BYTES: Final = 1024 * 1024


def _string_map(*, partial: bool = False) -> Obj:
    return {"type": "object", "additionalProperties": {"type": "string"}}


def _keyed_list(key: str, item: Obj | None = None) -> Obj:
    return {
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": [key],
        "items": item or {"type": "object", "x-fake-partial": True},
    }


def _partial(properties: Obj) -> Obj:
    return {"type": "object", "x-fake-partial": True, "properties": properties}


def _struct(properties: Obj) -> Obj:
    """A non-pointer Go struct field: always present in the typed object, so managedFields never record the
    struct itself (no `.` entry), only its fields (kube-apiserver v1.36.2: Lease `f:spec`, Event `f:source`)."""
    return {**_partial(properties), "x-fake-struct": True}


_ATOMIC_STRUCT: Final = {"type": "object", "x-kubernetes-map-type": "atomic"}


def _config_key_errors(data: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for key in data or {}:
        if len(key) > 253:
            errs.append(e.invalid(f"{path}[{key}]", key, "must be no more than 253 characters"))
        if not _CONFIG_KEY.fullmatch(key):
            errs.append(
                e.invalid(
                    f"{path}[{key}]",
                    key,
                    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',"
                    "  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
                )
            )
    return errs


def _decode_error(kind: str, detail: str) -> e.ApiError:
    return e.bad_request(f'{kind} in version "v1" cannot be handled as a {kind}: {detail}')


def _require_string_map(obj: Obj, field: str, kind: str) -> None:
    value = obj.get(field)
    if value is None:
        return
    if not isinstance(value, dict):
        raise _decode_error(
            kind,
            f"json: cannot unmarshal {typed.json_kind(value)} into Go struct field {kind}.{field} of type "
            "map[string]string"
            if field != "binaryData"
            else "map[string][]uint8",
        )
    for item in value.values():
        if not isinstance(item, str):
            raise _decode_error(
                kind,
                f"json: cannot unmarshal {typed.json_kind(item)} into Go struct field {kind}.{field} of type "
                + ("string" if field != "binaryData" else "[]uint8"),
            )


def _check_base64(obj: Obj, field: str, kind: str) -> None:
    for item in (obj.get(field) or {}).values():
        try:
            base64.b64decode(item, validate=True)
        except (binascii.Error, ValueError) as err:
            position = _bad_base64_position(item)
            raise _decode_error(kind, f"illegal base64 data at input byte {position}") from err


def _bad_base64_position(text: str) -> int:
    alphabet = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
    for index, char in enumerate(text):
        if char not in alphabet and char != "=":
            return index
    return max(len(text) - len(text) % 4, 0)


class NamespaceStrategy(Strategy):
    name_rule = "label"
    field_labels = frozenset({"status.phase"})
    return_deleted_object = True
    top_level_fields = frozenset({"apiVersion", "kind", "metadata", "spec", "status"})

    def default(self, obj: Obj) -> None:
        # SetDefaults_Namespace adds the name label while decoding: the creator owns it in managedFields.
        self._label(obj)

    def prepare_for_create(self, obj: Obj) -> None:
        obj["status"] = {"phase": "Active"}
        spec = obj.setdefault("spec", {})
        finalizers = list(spec.get("finalizers") or [])
        if "kubernetes" not in finalizers:
            finalizers.append("kubernetes")
        spec["finalizers"] = finalizers
        self._label(obj)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        new["spec"] = deep_copy(old.get("spec", {}))
        new["status"] = deep_copy(old.get("status", {}))
        self._label(new)

    def prepare_status_update(self, new: Obj, old: Obj) -> None:
        super().prepare_status_update(new, old)

    @staticmethod
    def _label(obj: Obj) -> None:
        # The NamespaceDefaultLabelName feature: every namespace carries its own name as a label.
        metadata = obj.setdefault("metadata", {})
        labels = dict(metadata.get("labels") or {})
        labels["kubernetes.io/metadata.name"] = str(metadata.get("name", ""))
        metadata["labels"] = labels


def _drop_empty_maps(obj: Obj, *fields: str) -> None:
    for name in fields:
        if obj.get(name) in ({}, None):
            obj.pop(name, None)


class ConfigMapStrategy(Strategy):
    top_level_fields = frozenset({"apiVersion", "kind", "metadata", "data", "binaryData", "immutable"})

    def prepare_for_create(self, obj: Obj) -> None:
        _drop_empty_maps(obj, "data", "binaryData")
        _require_string_map(obj, "data", "ConfigMap")
        _require_string_map(obj, "binaryData", "ConfigMap")
        _check_base64(obj, "binaryData", "ConfigMap")

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        self.prepare_for_create(new)

    def validate(self, obj: Obj, old: Obj | None, *, version: str) -> list[FieldError]:
        errs = _config_key_errors(obj.get("data"), "data") + _config_key_errors(obj.get("binaryData"), "binaryData")
        data = obj.get("data") or {}
        binary = obj.get("binaryData") or {}
        for key in data:
            if key in binary:
                errs.append(e.invalid(f"data[{key}]", key, "duplicate of key present in binaryData"))
        size = sum(len(k) + len(v) for k, v in data.items()) + sum(
            len(k) + len(base64.b64decode(v)) for k, v in binary.items()
        )
        if size > MAX_CONFIG_BYTES:
            errs.append(FieldError("FieldValueTooLong", "", "", f"must have at most {MAX_CONFIG_BYTES} bytes"))
        if old is not None and old.get("immutable") is True:
            if obj.get("data") != old.get("data"):
                errs.append(e.forbidden("data", "field is immutable when `immutable` is set"))
            if obj.get("binaryData") != old.get("binaryData"):
                errs.append(e.forbidden("binaryData", "field is immutable when `immutable` is set"))
            if obj.get("immutable") is not True:
                errs.append(e.forbidden("immutable", "field is immutable when `immutable` is set"))
        return errs


class SecretStrategy(Strategy):
    top_level_fields = frozenset({"apiVersion", "kind", "metadata", "data", "stringData", "type", "immutable"})
    field_labels = frozenset({"type"})

    def prepare_for_create(self, obj: Obj) -> None:
        _require_string_map(obj, "data", "Secret")
        _require_string_map(obj, "stringData", "Secret")
        _check_base64(obj, "data", "Secret")
        # stringData is write-only: it is folded into data (base64) and never stored.
        string_data = obj.pop("stringData", None) or {}
        if string_data:
            data = dict(obj.get("data") or {})
            for key, value in string_data.items():
                data[key] = base64.b64encode(value.encode()).decode()
            obj["data"] = data
        obj.setdefault("type", "Opaque")
        _drop_empty_maps(obj, "data")

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        self.prepare_for_create(new)

    def validate(self, obj: Obj, old: Obj | None, *, version: str) -> list[FieldError]:
        errs = _config_key_errors(obj.get("data"), "data")
        kind = obj.get("type", "Opaque")
        data = obj.get("data") or {}
        if kind == "kubernetes.io/tls":
            errs.extend(e.required(f"data[{key}]", "") for key in ("tls.crt", "tls.key") if key not in data)
        size = sum(len(k) + len(base64.b64decode(v)) for k, v in data.items())
        if size > MAX_CONFIG_BYTES:
            errs.append(e.too_long("data", MAX_CONFIG_BYTES))
        if old is not None:
            if obj.get("type") != old.get("type"):
                errs.append(e.invalid("type", obj.get("type", ""), "field is immutable"))
            if old.get("immutable") is True and (
                obj.get("data") != old.get("data") or obj.get("immutable") is not True
            ):
                errs.append(e.forbidden("data", "field is immutable when `immutable` is set"))
        return errs


_POD_MUTABLE_SPEC: Final = (
    "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)


class PodStrategy(Strategy):
    return_deleted_object = True
    field_labels = frozenset(
        {
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        }
    )
    top_level_fields = frozenset({"apiVersion", "kind", "metadata", "spec", "status"})

    def prepare_for_create(self, obj: Obj) -> None:
        spec = obj.setdefault("spec", {})
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("dnsPolicy", "ClusterFirst")
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("terminationGracePeriodSeconds", 30)
        spec.setdefault("securityContext", {})
        spec.setdefault("enableServiceLinks", True)
        for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
            if not isinstance(container, dict):
                continue
            image = str(container.get("image", ""))
            untagged = ":" not in image.rsplit("/", 1)[-1] and "@" not in image
            container.setdefault(
                "imagePullPolicy", "Always" if untagged or image.endswith(":latest") else "IfNotPresent"
            )
            container.setdefault("terminationMessagePath", "/dev/termination-log")
            container.setdefault("terminationMessagePolicy", "File")
            container.setdefault("resources", {})
        obj["status"] = {"phase": "Pending", "qosClass": _qos_class(spec)}

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        if "status" in old:
            new["status"] = deep_copy(old["status"])
        else:
            new.pop("status", None)

    def validate(self, obj: Obj, old: Obj | None, *, version: str) -> list[FieldError]:
        errs: list[FieldError] = []
        spec = obj.get("spec") or {}
        containers = spec.get("containers")
        if not containers:
            errs.append(e.required("spec.containers", ""))
        for index, container in enumerate(containers or []):
            if not isinstance(container, dict):
                continue
            if not container.get("name"):
                errs.append(e.required(f"spec.containers[{index}].name", ""))
            if not container.get("image") and old is None:
                errs.append(e.required(f"spec.containers[{index}].image", ""))
        if old is not None and _pod_spec_frozen(spec) != _pod_spec_frozen(old.get("spec") or {}):
            errs.append(e.forbidden("spec", _POD_MUTABLE_SPEC))
        return errs


def _pod_spec_frozen(spec: Obj) -> Obj:
    frozen = deep_copy(spec)
    for field in ("containers", "initContainers"):
        for container in frozen.get(field) or []:
            if isinstance(container, dict):
                container.pop("image", None)
    frozen.pop("activeDeadlineSeconds", None)
    frozen.pop("tolerations", None)
    return dict(frozen)


def _qos_class(spec: Obj) -> str:
    requests_seen = False
    guaranteed = True
    for container in spec.get("containers") or []:
        resources = (container or {}).get("resources") or {}
        limits = resources.get("limits") or {}
        requests = resources.get("requests") or {}
        if limits or requests:
            requests_seen = True
        for name in ("cpu", "memory"):
            if name not in limits or requests.get(name, limits.get(name)) != limits.get(name):
                guaranteed = False
    if not requests_seen:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


# core/v1 Event <-> events.k8s.io/v1 Event field names (pkg/apis/events/v1 conversion).
_EVENT_RENAMES: Final = (
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("count", "deprecatedCount"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("reportingComponent", "reportingController"),
)
_EVENT_LIMITS: Final = {"reportingInstance": 128, "action": 128, "reason": 128}
NOTE_LENGTH_LIMIT: Final = 1024


# Fields of core/v1 Event without `omitempty`: the Go struct always serializes them (null or "").
_CORE_EVENT_ZERO: Final = {
    "eventTime": None,
    "firstTimestamp": None,
    "lastTimestamp": None,
    "reportingComponent": "",
    "reportingInstance": "",
}
_EVENTS_V1_ZERO: Final = {"eventTime": None, "deprecatedFirstTimestamp": None, "deprecatedLastTimestamp": None}


class CoreEventStrategy(Strategy):
    allow_create_on_update = True
    typed_fields = typed.CORE_EVENT_FIELDS
    field_labels = frozenset(
        {
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        }
    )

    def field_value(self, obj: Obj, label: str) -> str | None:
        if label == "source":
            return str((obj.get("source") or {}).get("component", ""))
        return super().field_value(obj, label)

    def validate(self, obj: Obj, old: Obj | None, *, version: str) -> list[FieldError]:
        return _legacy_event_errors(obj, strict_api=False)

    def from_storage(self, obj: Obj, version: str) -> Obj:
        return {**obj, **{k: v for k, v in _CORE_EVENT_ZERO.items() if k not in obj}}


def _legacy_event_errors(obj: Obj, *, strict_api: bool) -> list[FieldError]:
    """legacyValidateEvent from pkg/apis/core/validation/events.go."""
    errs: list[FieldError] = []
    namespace = obj.get("metadata", {}).get("namespace", "")
    involved = obj.get("involvedObject") or {}
    controller_field = "reportingController" if strict_api else "reportingComponent"
    if not obj.get("eventTime"):
        involved_ns = involved.get("namespace", "")
        if not involved_ns:
            if namespace not in ("", "default"):
                errs.append(e.invalid("involvedObject.namespace", involved_ns, "does not match event.namespace"))
        elif namespace != involved_ns:
            errs.append(e.invalid("involvedObject.namespace", involved_ns, "does not match event.namespace"))
    else:
        if not involved.get("namespace") and namespace not in ("default", "kube-system"):
            errs.append(
                e.invalid("involvedObject.namespace", involved.get("namespace", ""), "does not match event.namespace")
            )
        controller = obj.get("reportingComponent", "")
        if not controller:
            errs.append(e.required(controller_field, ""))
        else:
            errs.extend(e.invalid(controller_field, controller, p) for p in meta.qualified_name_errors(controller))
        for name, limit in _EVENT_LIMITS.items():
            value = str(obj.get(name, ""))
            if not value:
                errs.append(e.required(name, ""))
            elif len(value) > limit:
                errs.append(e.invalid(name, "", f"can have at most {limit} characters"))
        if len(str(obj.get("message", ""))) > NOTE_LENGTH_LIMIT:
            errs.append(e.invalid("message", "", f"can have at most {NOTE_LENGTH_LIMIT} characters"))
    return errs


class EventsV1Strategy(CoreEventStrategy):
    """events.k8s.io/v1: same objects as core events, seen with renamed fields and strict validation."""

    field_labels = frozenset(
        {
            "regarding.kind",
            "regarding.namespace",
            "regarding.name",
            "regarding.uid",
            "regarding.apiVersion",
            "regarding.resourceVersion",
            "regarding.fieldPath",
            "reason",
            "reportingController",
            "type",
        }
    )
    typed_fields = typed.EVENTS_V1_FIELDS

    def field_value(self, obj: Obj, label: str) -> str | None:
        return Strategy.field_value(self, self.from_storage(obj, "v1"), label)

    def to_storage(self, obj: Obj, version: str) -> Obj:
        stored = dict(obj)
        stored["apiVersion"] = "v1"
        for core_name, new_name in _EVENT_RENAMES:
            if new_name in stored:
                stored[core_name] = stored.pop(new_name)
        source = stored.pop("deprecatedSource", None)
        if source:
            stored["source"] = source
        return stored

    def from_storage(self, obj: Obj, version: str) -> Obj:
        served = {**obj, **{k: v for k, v in _EVENTS_V1_ZERO.items() if k not in obj}}
        served["apiVersion"] = "events.k8s.io/v1"
        for core_name, new_name in _EVENT_RENAMES:
            if core_name in served:
                served[new_name] = served.pop(core_name)
        source = served.pop("source", None)
        if source:
            served["deprecatedSource"] = source
        return served

    def validate(self, obj: Obj, old: Obj | None, *, version: str) -> list[FieldError]:
        """ValidateEventCreate for events.k8s.io/v1 requests (stored form is core)."""
        if old is not None:
            return _legacy_event_errors(obj, strict_api=True)
        errs = _legacy_event_errors(obj, strict_api=True)
        if not obj.get("eventTime"):
            errs.append(e.required("eventTime", ""))
        kind = obj.get("type", "")
        if kind not in ("Normal", "Warning"):
            errs.append(e.invalid("type", "", f"has invalid value: {kind}"))
        for name in ("firstTimestamp", "lastTimestamp"):
            if obj.get(name):
                errs.append(e.invalid(name, "", "needs to be unset"))
        if obj.get("count"):
            errs.append(e.invalid("count", "", "needs to be unset"))
        source = obj.get("source") or {}
        if source.get("component") or source.get("host"):
            errs.append(e.invalid("source", "", "needs to be unset"))
        return errs


class LeaseStrategy(Strategy):
    top_level_fields = frozenset({"apiVersion", "kind", "metadata", "spec"})
    typed_fields = typed.LEASE_FIELDS

    def validate(self, obj: Obj, old: Obj | None, *, version: str) -> list[FieldError]:
        spec = obj.get("spec") or {}
        errs: list[FieldError] = []
        duration = spec.get("leaseDurationSeconds")
        if duration is not None and (not isinstance(duration, int) or duration <= 0):
            errs.append(e.invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
        transitions = spec.get("leaseTransitions")
        if transitions is not None and (not isinstance(transitions, int) or transitions < 0):
            errs.append(e.invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0"))
        return errs


class WebhookConfigurationStrategy(Strategy):
    """Mutating/ValidatingWebhookConfiguration: defaults of admissionregistration/v1 and key checks."""

    tracks_generation = True
    top_level_fields = frozenset({"apiVersion", "kind", "metadata", "webhooks"})
    mutating: ClassVar[bool] = False

    def prepare_for_create(self, obj: Obj) -> None:
        for webhook in obj.get("webhooks") or []:
            if not isinstance(webhook, dict):
                continue
            webhook.setdefault("failurePolicy", "Fail")
            webhook.setdefault("matchPolicy", "Equivalent")
            webhook.setdefault("namespaceSelector", {})
            webhook.setdefault("objectSelector", {})
            webhook.setdefault("timeoutSeconds", 10)
            if self.mutating:
                webhook.setdefault("reinvocationPolicy", "Never")
            for rule in webhook.get("rules") or []:
                if isinstance(rule, dict):
                    rule.setdefault("scope", "*")
            service = (webhook.get("clientConfig") or {}).get("service")
            if isinstance(service, dict):
                service.setdefault("port", 443)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        self.prepare_for_create(new)

    def validate(self, obj: Obj, old: Obj | None, *, version: str) -> list[FieldError]:
        errs: list[FieldError] = []
        names: set[str] = set()
        for index, webhook in enumerate(obj.get("webhooks") or []):
            path = f"webhooks[{index}]"
            if not isinstance(webhook, dict):
                errs.append(e.invalid(path, webhook, "must be an object"))
                continue
            name = str(webhook.get("name", ""))
            if not name:
                errs.append(e.required(f"{path}.name", ""))
            elif name.count(".") < 2:
                errs.append(
                    e.invalid(f"{path}.name", name, "should be a domain with at least three segments separated by dots")
                )
            elif name in names:
                errs.append(e.duplicate(f"{path}.name", name))
            names.add(name)
            client = webhook.get("clientConfig") or {}
            has_url = bool(client.get("url"))
            has_service = isinstance(client.get("service"), dict)
            if has_url == has_service:
                errs.append(e.required(f"{path}.clientConfig", "exactly one of url or service is required"))
            versions = webhook.get("admissionReviewVersions")
            if not versions:
                errs.append(e.required(f"{path}.admissionReviewVersions", "must specify one of v1, v1beta1"))
            side_effects = webhook.get("sideEffects")
            if side_effects is None:
                errs.append(e.required(f"{path}.sideEffects", "must specify one of None, NoneOnDryRun"))
            elif side_effects not in ("None", "NoneOnDryRun"):
                errs.append(e.not_supported(f"{path}.sideEffects", side_effects, ["None", "NoneOnDryRun"]))
            policy = webhook.get("failurePolicy")
            if policy not in ("Fail", "Ignore"):
                errs.append(e.not_supported(f"{path}.failurePolicy", policy, ["Fail", "Ignore"]))
            timeout = webhook.get("timeoutSeconds")
            if not isinstance(timeout, int) or not 1 <= timeout <= 30:
                errs.append(
                    e.invalid(f"{path}.timeoutSeconds", timeout, "the timeout value must be between 1 and 30 seconds")
                )
        return errs


class MutatingWebhookConfigurationStrategy(WebhookConfigurationStrategy):
    mutating = True


def builtin_resources() -> list[ResourceInfo]:
    from tests.fakeapi.crds import CrdStrategy
    from tests.fakeapi.stored_kinds import stored_resources

    meta_only = {"type": "object", "x-fake-partial": True}
    webhook_item = _partial({"rules": {"type": "array", "x-kubernetes-list-type": "atomic"}})
    return [
        ResourceInfo(
            group="",
            plural="namespaces",
            singular="namespace",
            kind="Namespace",
            namespaced=False,
            versions={"v1": VersionInfo("v1", status_subresource=True)},
            strategy=NamespaceStrategy(),
            short_names=["ns"],
            type_schema=_partial(
                {
                    "spec": _struct({"finalizers": {"type": "array", "x-kubernetes-list-type": "atomic"}}),
                    "status": _struct({"conditions": _keyed_list("type")}),
                }
            ),
        ),
        ResourceInfo(
            group="",
            plural="configmaps",
            singular="configmap",
            kind="ConfigMap",
            namespaced=True,
            versions={"v1": VersionInfo("v1")},
            strategy=ConfigMapStrategy(),
            short_names=["cm"],
            type_schema=_partial({"data": _string_map(), "binaryData": _string_map()}),
        ),
        ResourceInfo(
            group="",
            plural="secrets",
            singular="secret",
            kind="Secret",
            namespaced=True,
            versions={"v1": VersionInfo("v1")},
            strategy=SecretStrategy(),
            type_schema=_partial({"data": _string_map(), "stringData": _string_map()}),
        ),
        ResourceInfo(
            group="",
            plural="pods",
            singular="pod",
            kind="Pod",
            namespaced=True,
            versions={"v1": VersionInfo("v1", status_subresource=True)},
            strategy=PodStrategy(),
            short_names=["po"],
            categories=["all"],
            type_schema=_partial(
                {
                    "spec": _partial(
                        {
                            "containers": _keyed_list(
                                "name",
                                _partial(
                                    {
                                        "ports": {
                                            "type": "array",
                                            "x-kubernetes-list-type": "map",
                                            "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
                                            "items": meta_only,
                                        },
                                        "env": _keyed_list("name"),
                                        "volumeMounts": _keyed_list("mountPath"),
                                    }
                                ),
                            ),
                            "initContainers": _keyed_list("name"),
                            "volumes": _keyed_list("name"),
                        }
                    ),
                    "status": _partial({"conditions": _keyed_list("type")}),
                }
            ),
        ),
        ResourceInfo(
            group="",
            plural="events",
            singular="event",
            kind="Event",
            namespaced=True,
            versions={"v1": VersionInfo("v1")},
            strategy=CoreEventStrategy(),
            short_names=["ev"],
            # involvedObject is an ObjectReference (+structType=atomic); source a struct always present.
            type_schema=_partial({"involvedObject": _ATOMIC_STRUCT, "source": _struct({})}),
        ),
        ResourceInfo(
            group="events.k8s.io",
            plural="events",
            singular="event",
            kind="Event",
            namespaced=True,
            versions={"v1": VersionInfo("v1")},
            strategy=EventsV1Strategy(),
            short_names=["ev"],
            storage_group="",
        ),
        ResourceInfo(
            group="coordination.k8s.io",
            plural="leases",
            singular="lease",
            kind="Lease",
            namespaced=True,
            versions={"v1": VersionInfo("v1")},
            strategy=LeaseStrategy(),
            type_schema=_partial({"spec": _struct({})}),
        ),
        ResourceInfo(
            group="admissionregistration.k8s.io",
            plural="mutatingwebhookconfigurations",
            singular="mutatingwebhookconfiguration",
            kind="MutatingWebhookConfiguration",
            namespaced=False,
            versions={"v1": VersionInfo("v1")},
            strategy=MutatingWebhookConfigurationStrategy(),
            categories=["api-extensions"],
            type_schema=_partial({"webhooks": _keyed_list("name", webhook_item)}),
        ),
        ResourceInfo(
            group="admissionregistration.k8s.io",
            plural="validatingwebhookconfigurations",
            singular="validatingwebhookconfiguration",
            kind="ValidatingWebhookConfiguration",
            namespaced=False,
            versions={"v1": VersionInfo("v1")},
            strategy=WebhookConfigurationStrategy(),
            categories=["api-extensions"],
            type_schema=_partial({"webhooks": _keyed_list("name", webhook_item)}),
        ),
        ResourceInfo(
            group="apiextensions.k8s.io",
            plural="customresourcedefinitions",
            singular="customresourcedefinition",
            kind="CustomResourceDefinition",
            namespaced=False,
            versions={"v1": VersionInfo("v1", status_subresource=True)},
            strategy=CrdStrategy(),
            short_names=["crd", "crds"],
            categories=["api-extensions"],
            type_schema=_partial(
                {
                    "spec": _struct(
                        {
                            "names": _struct({}),
                            # Atomic, as kube-apiserver's OpenAPI says: a second field manager applying a
                            # different list conflicts on `.spec.versions` as a whole.
                            "versions": {"type": "array", "x-kubernetes-list-type": "atomic"},
                        }
                    ),
                    "status": _struct({"conditions": _keyed_list("type")}),
                }
            ),
        ),
        *stored_resources(),
    ]
