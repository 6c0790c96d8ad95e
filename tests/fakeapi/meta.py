"""ObjectMeta rules common to every kind: names, labels, annotations, owner references, finalizers.

Messages follow apimachinery's `validation` packages (ValidateObjectMeta / ValidateObjectMetaUpdate).
"""

from __future__ import annotations

import re
from typing import Any, Final

from tests.fakeapi import errors as e
from tests.fakeapi.errors import FieldError

Obj = dict[str, Any]

OBJECT_META_FIELDS: Final = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)
STANDARD_FINALIZERS: Final = frozenset({"kubernetes", "orphan", "foregroundDeletion"})

_DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = _DNS1123_LABEL + r"(\." + _DNS1123_LABEL + ")*"
_QUALIFIED_NAME = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE = "(" + _QUALIFIED_NAME + ")?"

_LABEL_RE = re.compile(_DNS1123_LABEL)
_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN)
_QUALIFIED_RE = re.compile(_QUALIFIED_NAME)
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE)


def _regex_error(message: str, regex: str, examples: list[str]) -> str:
    shown = ",  or ".join(f"'{x}'" for x in examples)
    return f"{message} (e.g. {shown}, regex used for validation is '{regex}')"


def dns1123_subdomain_errors(value: str) -> list[str]:
    problems = []
    if len(value) > 253:
        problems.append("must be no more than 253 characters")
    if not _SUBDOMAIN_RE.fullmatch(value):
        problems.append(
            _regex_error(
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                "and must start and end with an alphanumeric character",
                _DNS1123_SUBDOMAIN,
                ["example.com"],
            )
        )
    return problems


def dns1123_label_errors(value: str) -> list[str]:
    problems = []
    if len(value) > 63:
        problems.append("must be no more than 63 characters")
    if not _LABEL_RE.fullmatch(value):
        problems.append(
            _regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                "and must start and end with an alphanumeric character",
                _DNS1123_LABEL,
                ["my-name", "123-abc"],
            )
        )
    return problems


def path_segment_errors(value: str) -> list[str]:
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{bad}'" for bad in ("/", "%") if bad in value]


def qualified_name_errors(value: str) -> list[str]:
    """IsQualifiedName: an optional DNS-subdomain prefix and a '/' before a name part."""
    problems: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            problems.extend("prefix part " + p for p in dns1123_subdomain_errors(prefix))
    else:
        return [
            _regex_error(
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and "
                "end with an alphanumeric character",
                _QUALIFIED_NAME,
                ["MyName", "my.name", "123-abc"],
            )
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > 63:
        problems.append("name part must be no more than 63 characters")
    if not _QUALIFIED_RE.fullmatch(name):  # an empty name part fails the pattern too (two errors)
        problems.append(
            _regex_error(
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
                "an alphanumeric character",
                _QUALIFIED_NAME,
                ["MyName", "my.name", "123-abc"],
            )
        )
    return problems


def label_value_errors(value: str) -> list[str]:
    problems = []
    if len(value) > 63:
        problems.append("must be no more than 63 characters")
    if not _LABEL_VALUE_RE.fullmatch(value):
        problems.append(
            _regex_error(
                "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                "and must start and end with an alphanumeric character",
                _LABEL_VALUE,
                ["MyValue", "my_value", "12345"],
            )
        )
    return problems


def name_errors(name: str, rule: str) -> list[str]:
    if rule == "label":
        return dns1123_label_errors(name)
    if rule == "path":
        return path_segment_errors(name)
    return dns1123_subdomain_errors(name)


def validate_labels(labels: Any, path: str) -> list[FieldError]:
    if labels is None:
        return []
    if not isinstance(labels, dict):
        return [e.invalid(path, labels, "must be a map of strings")]
    errs: list[FieldError] = []
    for key, value in labels.items():
        errs.extend(e.invalid(path, key, p) for p in qualified_name_errors(key))
        if not isinstance(value, str):
            errs.append(e.invalid(f"{path}[{key}]", value, "must be a string"))
            continue
        errs.extend(e.invalid(path, value, p) for p in label_value_errors(value))
    return errs


TOTAL_ANNOTATION_SIZE_LIMIT: Final = 256 * 1024


def validate_annotations(annotations: Any, path: str) -> list[FieldError]:
    if annotations is None:
        return []
    if not isinstance(annotations, dict):
        return [e.invalid(path, annotations, "must be a map of strings")]
    errs: list[FieldError] = []
    total = 0
    for key, value in annotations.items():
        errs.extend(e.invalid(path, key, p) for p in qualified_name_errors(key.lower()))
        if not isinstance(value, str):
            errs.append(e.invalid(f"{path}[{key}]", value, "must be a string"))
            continue
        total += len(key) + len(value)
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(e.too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return errs


def validate_owner_references(refs: Any, path: str) -> list[FieldError]:
    if refs is None:
        return []
    if not isinstance(refs, list):
        return [e.invalid(path, refs, "must be a list")]
    errs: list[FieldError] = []
    controllers: list[str] = []
    for ref in refs:
        if not isinstance(ref, dict):
            errs.append(e.invalid(path, ref, "must be an object"))
            continue
        if not ref.get("apiVersion"):
            errs.append(e.invalid(f"{path}.apiVersion", ref.get("apiVersion", ""), "version must not be empty"))
        if not ref.get("kind"):
            errs.append(e.invalid(f"{path}.kind", ref.get("kind", ""), "kind must not be empty"))
        if not ref.get("name"):
            errs.append(e.invalid(f"{path}.name", ref.get("name", ""), "name must not be empty"))
        if not ref.get("uid"):
            errs.append(e.invalid(f"{path}.uid", ref.get("uid", ""), "uid must not be empty"))
        if ref.get("controller") is True:
            controllers.append(f"{ref.get('kind', '')}/{ref.get('name', '')}")
    if len(controllers) > 1:
        errs.append(
            e.invalid(
                path,
                e.OMIT,
                'Only one reference can have Controller set to true. Found "true" in references for '
                + " and ".join(controllers),
            )
        )
    return errs


def validate_finalizers(finalizers: Any, path: str) -> list[FieldError]:
    if finalizers is None:
        return []
    if not isinstance(finalizers, list) or not all(isinstance(f, str) for f in finalizers):
        return [e.invalid(path, finalizers, "must be a list of strings")]
    errs: list[FieldError] = []
    for index, name in enumerate(finalizers):
        item = f"{path}[{index}]"
        errs.extend(e.invalid(item, name, p) for p in qualified_name_errors(name))
        if "/" not in name and name not in STANDARD_FINALIZERS:
            errs.append(e.invalid(item, name, "name is neither a standard finalizer name nor is it fully qualified"))
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        errs.append(e.invalid(path, finalizers, "finalizer orphan and foregroundDeletion cannot be both set"))
    return errs


def drop_empty(meta: Obj) -> None:
    """ObjectMeta fields are `omitempty`: empty strings, lists and maps do not survive a round trip."""
    for key in [k for k, v in meta.items() if v in ("", None, [], {}) and k != "name"]:
        del meta[key]


def validate_object_meta(meta: Obj, *, namespaced: bool, name_rule: str) -> list[FieldError]:
    """ValidateObjectMeta for a create (and the parts of an update that are checked the same way)."""
    errs: list[FieldError] = []
    name = meta.get("name", "")
    if not name:
        errs.append(e.required("metadata.name", "name or generateName is required"))
    else:
        errs.extend(e.invalid("metadata.name", name, p) for p in name_errors(name, name_rule))
    namespace = meta.get("namespace", "")
    if namespaced and not namespace:
        errs.append(e.required("metadata.namespace", ""))
    if not namespaced and namespace:
        errs.append(e.forbidden("metadata.namespace", "not allowed on this type"))
    errs.extend(validate_labels(meta.get("labels"), "metadata.labels"))
    errs.extend(validate_annotations(meta.get("annotations"), "metadata.annotations"))
    errs.extend(validate_owner_references(meta.get("ownerReferences"), "metadata.ownerReferences"))
    errs.extend(validate_finalizers(meta.get("finalizers"), "metadata.finalizers"))
    return errs


def validate_object_meta_update(new: Obj, old: Obj) -> list[FieldError]:
    """The immutability half of ValidateObjectMetaUpdate (the rest is validate_object_meta)."""
    errs: list[FieldError] = []
    for key in ("name", "namespace", "uid", "creationTimestamp"):
        if new.get(key) != old.get(key):
            errs.append(e.invalid(f"metadata.{key}", new.get(key, ""), "field is immutable"))
    if old.get("deletionTimestamp"):
        added = sorted(set(new.get("finalizers") or []) - set(old.get("finalizers") or []))
        if added:
            shown = "[]string{" + ", ".join(e.go_quote(f) for f in added) + "}"
            error = e.forbidden(
                "metadata.finalizers",
                f"no new finalizers can be added if the object is being deleted, found new finalizers {shown}",
            )
            # Twice, as kube-apiserver v1.36.2 reports it (rest.BeforeUpdate's common-field check and the kind's
            # own update validation both run ValidateObjectMetaUpdate); the message shows it once.
            errs.extend([error, error])
    return errs
