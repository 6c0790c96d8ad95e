"""The generic registry: create / update / patch / apply / delete / list, in kube-apiserver's order.

Create: decode (prune + default) -> managed fields -> mutating webhooks -> PrepareForCreate + system
fields + generateName -> validation -> validating webhooks -> store (409 AlreadyExists if taken).
Update (PUT, PATCH, apply): existing object -> managed fields -> mutating webhooks -> resourceVersion
precondition (409 Conflict) -> PrepareForUpdate (status split, generation) -> validation -> validating
webhooks -> no-op detection (no write, same resourceVersion) -> store, or delete when the last finalizer
of a deleting object went away.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import yaml

from tests.fakeapi import errors as e
from tests.fakeapi import managed, meta, patch, schema, typed
from tests.fakeapi.admission import Admission, AdmissionSettings, Attributes, Outcome
from tests.fakeapi.crds import CLEANUP_FINALIZER, established_status, resource_from_crd
from tests.fakeapi.errors import ApiError, FieldError, GroupKind
from tests.fakeapi.resources import ResourceInfo
from tests.fakeapi.selectors import field_matcher, label_matcher
from tests.fakeapi.store import Store
from tests.fakeapi.util import Clock, deep_copy, json_equal, rfc3339

Obj = dict[str, Any]

CRD_KEY: Final = "customresourcedefinitions.apiextensions.k8s.io"
NAMESPACE_KEY: Final = "namespaces"
_NAME_CHARS: Final = "bcdfghjklmnpqrstvwxz2456789"


@dataclass
class Request:
    """One API request, already routed."""

    res: ResourceInfo
    version: str
    namespace: str = ""
    name: str = ""
    subresource: str = ""
    dry_run: bool = False
    field_manager: str = ""  # the manager recorded in managedFields
    field_manager_param: str | None = None  # the fieldManager query parameter as sent
    field_validation: str = "Warn"
    force: bool | None = None
    warnings: list[str] = field(default_factory=list)
    skip_admission: bool = False  # internal writes (test helpers, some controllers) bypass webhooks
    user_info: Obj | None = None  # who webhooks are told is asking (None: AdmissionSettings.user_info)

    @property
    def scope(self) -> managed.Scope:
        return managed.Scope(self.subresource, self.res.has_status(self.version))


def _rv_required(res: ResourceInfo, name: str) -> ApiError:
    # The GroupKind is {group, resource plural}: that is how store.Update builds this error.
    err = e.invalid("metadata.resourceVersion", 0, "must be specified for an update")
    return e.invalid_object(GroupKind(res.group, res.plural), name, [err])


class Registry:
    def __init__(
        self,
        *,
        store: Store,
        clock: Clock,
        admission_settings: AdmissionSettings,
        require_namespaces: bool,
    ) -> None:
        self.store = store
        self.clock = clock
        self.require_namespaces = require_namespaces
        self.resources: dict[tuple[str, str], ResourceInfo] = {}
        self.admission = Admission(
            settings=admission_settings,
            list_configs=self.store.items,
            namespace_labels=self._namespace_labels,
        )
        # Called after an object is deleted for good or written (garbage collector hooks).
        self.on_crd_change: list[Callable[[], None]] = []

    # ---- resource registry -------------------------------------------------------------------------------

    def register(self, res: ResourceInfo) -> None:
        self.resources[(res.group, res.plural)] = res
        self.store.hub.new_resource(res.storage_key, self.store.rv)
        for hook in self.on_crd_change:
            hook()

    def unregister(self, group: str, plural: str) -> None:
        removed = self.resources.pop((group, plural), None)
        if removed is not None:
            self.store.hub.forget(removed.storage_key, self.store.rv)
        for hook in self.on_crd_change:
            hook()

    def lookup(self, group: str, version: str, plural: str) -> ResourceInfo | None:
        res = self.resources.get((group, plural))
        if res is None or version not in res.versions:
            return None
        return res

    def by_storage_key(self, storage_key: str) -> ResourceInfo | None:
        for res in self.resources.values():
            if res.storage_key == storage_key and res.storage_group is None:
                return res
        return None

    def served(self) -> list[ResourceInfo]:
        return list(self.resources.values())

    # ---- representations --------------------------------------------------------------------------------

    def external(self, res: ResourceInfo, version: str, stored: Obj) -> Obj:
        """A stored object as served at `version`."""
        served = res.strategy.from_storage(stored, version)
        api_version = res.api_version(version)
        if served.get("apiVersion") != api_version:
            served = dict(served)
            served["apiVersion"] = api_version
        return served

    def internal(self, res: ResourceInfo, version: str, obj: Obj) -> Obj:
        stored = res.strategy.to_storage(obj, version)
        if isinstance(stored.get("metadata"), dict):
            meta.drop_empty(stored["metadata"])
        if res.custom:
            stored["apiVersion"] = res.api_version(res.storage_version)
        return stored

    def now(self) -> str:
        return rfc3339(self.clock())

    # ---- decoding ----------------------------------------------------------------------------------------

    def decode(self, req: Request, body: Any, *, what: str = "body") -> Obj:
        """Type checks, namespace defaulting, pruning and defaulting of a request object."""
        res = req.res
        if not isinstance(body, dict):
            raise e.bad_request(
                f"json: cannot unmarshal {_json_kind(body)} into Go value of type "
                f"{'unstructured.Unstructured' if res.custom else res.kind}"
            )
        expected_version = res.api_version(req.version)
        api_version = body.get("apiVersion")
        kind = body.get("kind")
        if res.custom and not kind:
            raise e.bad_request(f"Object 'Kind' is missing in '{_compact(body)}'")
        if res.custom and not api_version:
            raise e.bad_request(f"Object 'apiVersion' is missing in '{_compact(body)}'")
        if api_version and api_version != expected_version:
            raise e.bad_request(
                f"the API version in the data ({api_version}) does not match the expected API version "
                f"({expected_version})"
            )
        if kind and kind != res.kind:
            raise e.bad_request(f"the kind in the data ({kind}) does not match the expected kind ({res.kind})")
        body["apiVersion"] = expected_version
        body["kind"] = res.kind
        problem = typed.decode_error(body, res.strategy.typed_fields)
        if problem:
            raise e.bad_request(f'{res.kind} in version "{req.version}" cannot be handled as a {res.kind}: {problem}')
        metadata = body.get("metadata")
        if metadata is None:
            metadata = body["metadata"] = {}
        if not isinstance(metadata, dict):
            raise e.bad_request(
                f"json: cannot unmarshal {_json_kind(metadata)} into Go struct field "
                f"{res.kind}.metadata of type v1.ObjectMeta"
            )
        if res.namespaced:
            namespace = metadata.get("namespace")
            if namespace and req.namespace and namespace != req.namespace:
                raise e.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            if req.namespace:
                metadata["namespace"] = req.namespace
        else:
            # rest.BeforeCreate clears the namespace of cluster-scoped objects.
            metadata.pop("namespace", None)
        unknown = self._prune(res, req.version, body)
        self._report_unknown(req, unknown)
        self._default(res, req.version, body)
        return body

    def _prune(self, res: ResourceInfo, version: str, obj: Obj) -> list[str]:
        open_api = res.schema(version)
        if res.custom:
            return schema.prune(obj, open_api) if open_api else []
        unknown = []
        metadata = obj.get("metadata") or {}
        for key in list(metadata):
            if key not in meta.OBJECT_META_FIELDS:
                unknown.append(f"metadata.{key}")
                del metadata[key]
        allowed = res.strategy.top_level_fields
        if allowed is not None:
            for key in list(obj):
                if key not in allowed:
                    unknown.append(key)
                    del obj[key]
        return unknown

    def _default(self, res: ResourceInfo, version: str, obj: Obj) -> None:
        open_api = res.schema(version)
        if res.custom and open_api:
            schema.apply_defaults(obj, open_api)
        if not res.custom:
            res.strategy.default(obj)

    def _report_unknown(self, req: Request, unknown: list[str]) -> None:
        if not unknown or req.field_validation == "Ignore":
            return
        unknown = sorted(unknown)  # kube-apiserver sorts the pruned paths before reporting them
        if req.field_validation == "Strict":
            detail = ", ".join(f'unknown field "{u}"' for u in unknown)
            raise e.bad_request(
                f'{req.res.kind} in version "{req.version}" cannot be handled as a {req.res.kind}: '
                f"strict decoding error: {detail}"
            )
        req.warnings.extend(f'unknown field "{u}"' for u in unknown)

    def normalize(self, req: Request, obj: Obj) -> Obj:
        """Prune and default again (after a webhook patch or an apply merge), silently."""
        self._prune(req.res, req.version, obj)
        if not req.res.custom:
            _drop_nulls(obj)
        self._default(req.res, req.version, obj)
        return obj

    async def _mutate(self, req: Request, attrs: Attributes, *, normalize: Callable[[Obj], Obj]) -> Outcome:
        if req.skip_admission:
            return Outcome(attrs.obj)
        attrs.user_info = req.user_info
        return await self.admission.mutate(attrs, normalize=normalize)

    async def _admit(self, req: Request, attrs: Attributes) -> Outcome:
        if req.skip_admission:
            return Outcome(attrs.obj)
        attrs.user_info = req.user_info
        return await self.admission.validate(attrs)

    # ---- reads ----------------------------------------------------------------------------------------

    def get(self, req: Request) -> Obj:
        stored = self.store.get(req.res.storage_key, req.namespace, req.name)
        if stored is None:
            raise e.not_found(req.res.group_resource, req.name)
        return self.external(req.res, req.version, stored)

    def matcher(self, req: Request, *, label_selector: str | None, field_selector: str | None) -> Callable[[Obj], bool]:
        labels = label_matcher(label_selector)
        fields = field_matcher(
            field_selector,
            value_of=req.res.strategy.field_value,
            default_conversion=not req.res.custom and not req.res.strategy.field_labels,
        )
        namespace = req.namespace

        def matches(obj: Obj) -> bool:
            if namespace and obj.get("metadata", {}).get("namespace") != namespace:
                return False
            return labels(obj) and fields(obj)

        return matches

    def list_objects(
        self,
        req: Request,
        *,
        label_selector: str | None,
        field_selector: str | None,
        limit: int | None,
        continue_token: str | None,
    ) -> Obj:
        matches = self.matcher(req, label_selector=label_selector, field_selector=field_selector)
        list_rv = self.store.rv
        start: tuple[str, str] | None = None
        if continue_token:
            start, list_rv = _decode_continue(continue_token)
        items = [o for o in self.store.items(req.res.storage_key, req.namespace or None) if matches(o)]
        if start is not None:
            items = [o for o in items if _key(o) > start]
        list_meta: Obj = {"resourceVersion": str(list_rv)}
        if limit and len(items) > limit:
            remaining = len(items) - limit
            items = items[:limit]
            list_meta["continue"] = _encode_continue(_key(items[-1]), list_rv)
            list_meta["remainingItemCount"] = remaining
        elif req.res.custom:
            # A custom resource list is unstructured: its metadata always carries `continue`, empty on the last
            # page (kube-apiserver v1.36.2); typed lists omit it.
            list_meta["continue"] = ""
        served = [self.external(req.res, req.version, o) for o in items]
        if not req.res.custom:
            # Items of built-in lists carry no apiVersion/kind on the wire.
            served = [{k: v for k, v in o.items() if k not in ("apiVersion", "kind")} for o in served]
        return {
            "kind": req.res.list_kind,
            "apiVersion": req.res.api_version(req.version),
            "metadata": list_meta,
            "items": served,
        }

    # ---- create -------------------------------------------------------------------------------------------

    async def create(self, req: Request, body: Any) -> tuple[int, Obj]:
        if req.res.terminating:
            refused = e.method_not_supported(req.res.group_resource, "create")
            refused.message = "create not allowed while custom resource definition is terminating"
            raise refused
        obj = self.decode(req, body)
        return await self._create(req, obj, entries=None, options_kind="CreateOptions")

    def _record_update(self, req: Request, *, live: Obj | None, new: Obj) -> list[managed.Entry]:
        """managedFields after a create or update by the request's field manager (Update operation)."""
        return managed.record_update(
            entries=managed.starting_entries(new, live),
            live=live,
            new=new,
            schema=self.type_schema(req.res, req.version),
            manager=req.field_manager,
            api_version=req.res.api_version(req.version),
            scope=req.scope,
            now=self.now(),
        )

    def _check_namespace(self, req: Request, name: str) -> None:
        if not req.res.namespaced or not self.require_namespaces:
            return
        namespace = self.store.get(NAMESPACE_KEY, "", req.namespace)
        if namespace is None:
            raise e.not_found(e.GroupResource("", "namespaces"), req.namespace)
        if namespace.get("metadata", {}).get("deletionTimestamp"):
            failure = e.forbidden_error(
                req.res.group_resource,
                name,
                f"unable to create new content in namespace {req.namespace} because it is being terminated",
            )
            assert failure.details is not None
            failure.details["causes"] = [
                {
                    "reason": "NamespaceTerminating",
                    "message": f"namespace {req.namespace} is being terminated",
                    "field": "metadata.namespace",
                }
            ]
            raise failure

    def _options(self, req: Request, kind: str) -> Obj:
        options: Obj = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
        if req.dry_run:
            options["dryRun"] = ["All"]
        if req.field_manager_param:
            options["fieldManager"] = req.field_manager_param
        if kind == "PatchOptions" and req.force is not None:
            options["force"] = req.force
        return options

    async def _create(
        self, req: Request, obj: Obj, *, entries: list[managed.Entry] | None, options_kind: str
    ) -> tuple[int, Obj]:
        res = req.res
        metadata = obj["metadata"]
        self._check_namespace(req, metadata.get("name") or metadata.get("generateName", ""))
        if _positive_rv(metadata.get("resourceVersion")):
            raise ApiError(500, "", "resourceVersion should not be set on objects to be created")
        if entries is None:
            entries = self._record_update(req, live=None, new=obj)
        outcome = await self._mutate(
            req,
            Attributes(
                res,
                req.version,
                "",
                "CREATE",
                str(metadata.get("name", "")),
                req.namespace,
                obj,
                None,
                req.dry_run,
                self._options(req, options_kind),
            ),
            normalize=lambda o: self.normalize(req, o),
        )
        req.warnings.extend(outcome.warnings)
        obj = outcome.obj or obj
        stored = self.internal(res, req.version, obj)
        stored_meta = stored.setdefault("metadata", {})
        stored_meta.pop("deletionTimestamp", None)
        stored_meta.pop("deletionGracePeriodSeconds", None)
        stored_meta.pop("selfLink", None)
        stored_meta.pop("resourceVersion", None)
        res.strategy.prepare_for_create(stored)
        stored_meta["uid"] = str(uuid.uuid4())
        stored_meta["creationTimestamp"] = self.now()
        if res.strategy.tracks_generation:
            stored_meta["generation"] = 1
        else:
            stored_meta.pop("generation", None)
        generated = bool(stored_meta.get("generateName")) and not stored_meta.get("name")
        if generated:
            stored_meta["name"] = self._generate_name(res, req.namespace, str(stored_meta["generateName"]))
        managed.write(stored, entries)
        errs = meta.validate_object_meta(stored_meta, namespaced=res.namespaced, name_rule=res.strategy.name_rule)
        errs += res.strategy.validate(stored, None, version=req.version)
        errs += self._schema_errors(req, stored, None)
        name = str(stored_meta.get("name", ""))
        if errs:
            raise e.invalid_object(res.group_kind, name, errs)
        served = self.external(res, req.version, stored)
        outcome = await self._admit(
            req,
            Attributes(
                res,
                req.version,
                "",
                "CREATE",
                name,
                req.namespace,
                served,
                None,
                req.dry_run,
                self._options(req, options_kind),
            ),
        )
        req.warnings.extend(outcome.warnings)
        if self.store.get(res.storage_key, req.namespace, name) is not None:
            raise e.already_exists(res.group_resource, name)
        if req.dry_run:
            return 201, served
        if res.storage_key == CRD_KEY:
            stored["status"] = established_status(stored, self.now())
            self._serve_crd(stored)
        committed = self.store.insert(res.storage_key, stored)
        return 201, self.external(res, req.version, committed)

    def _generate_name(self, res: ResourceInfo, namespace: str, prefix: str) -> str:
        for _ in range(8):
            candidate = prefix[:58] + "".join(random.choice(_NAME_CHARS) for _ in range(5))
            if self.store.get(res.storage_key, namespace, candidate) is None:
                return candidate
        return candidate

    def type_schema(self, res: ResourceInfo, version: str) -> Obj | None:
        return res.schema(version) if res.custom else res.type_schema

    def _schema_errors(self, req: Request, stored: Obj, old: Obj | None) -> list[FieldError]:
        open_api = req.res.schema(req.version)
        if not req.res.custom or not open_api:
            return []
        served = self.external(req.res, req.version, stored)
        old_served = self.external(req.res, req.version, old) if old is not None else None
        # A status write is validated against the status schema only, but CEL rules run on the whole object.
        scope = "status" if req.subresource == "status" else None
        outcome = schema.check(served, open_api, old_served, openapi_scope=scope)
        req.warnings.extend(outcome.warnings)
        return outcome.errors

    # ---- update -------------------------------------------------------------------------------------------

    async def update(self, req: Request, body: Any) -> tuple[int, Obj]:
        obj = self.decode(req, body)
        body_name = obj.get("metadata", {}).get("name", "")
        if body_name != req.name:
            raise e.bad_request(f"the name of the object ({body_name}) does not match the name on the URL ({req.name})")
        existing = self.store.get(req.res.storage_key, req.namespace, req.name)
        if existing is None:
            if req.res.strategy.allow_create_on_update and not req.subresource:
                obj["metadata"].pop("resourceVersion", None)
                return await self._create(req, obj, entries=None, options_kind="CreateOptions")
            raise e.not_found(req.res.group_resource, req.name)
        return await self._update(req, obj, existing, entries=None, options_kind="UpdateOptions")

    async def _update(
        self,
        req: Request,
        new: Obj,
        existing: Obj,
        *,
        entries: list[managed.Entry] | None,
        options_kind: str,
    ) -> tuple[int, Obj]:
        res = req.res
        old_served = self.external(res, req.version, existing)
        new_meta = new.setdefault("metadata", {})
        old_meta = existing.get("metadata", {})
        if entries is None:
            entries = self._record_update(req, live=old_served, new=new)
        if new_meta.get("uid") and new_meta["uid"] != old_meta.get("uid"):
            raise e.conflict(
                res.group_resource,
                req.name,
                f"Precondition failed: UID in precondition: {new_meta['uid']}, "
                f"UID in object meta: {old_meta.get('uid')}",
            )
        outcome = await self._mutate(
            req,
            Attributes(
                res,
                req.version,
                req.subresource,
                "UPDATE",
                req.name,
                req.namespace,
                new,
                old_served,
                req.dry_run,
                self._options(req, options_kind),
            ),
            normalize=lambda o: self.normalize(req, o),
        )
        req.warnings.extend(outcome.warnings)
        new = outcome.obj or new
        new_meta = new.setdefault("metadata", {})
        requested_rv = str(new_meta.get("resourceVersion") or "")
        if not requested_rv:
            if not res.strategy.allow_unconditional_update:
                raise _rv_required(res, req.name)
        elif requested_rv != old_meta.get("resourceVersion"):
            raise e.conflict(res.group_resource, req.name, e.STALE_OBJECT)
        stored = self.internal(res, req.version, new)
        if req.subresource == "status":
            res.strategy.prepare_status_update(stored, existing)
        else:
            res.strategy.prepare_for_update(stored, existing)
        stored_meta = stored.setdefault("metadata", {})
        self._keep_system_fields(stored_meta, old_meta)
        if res.strategy.tracks_generation and _content(stored, res, req.version) != _content(
            existing, res, req.version
        ):
            stored_meta["generation"] = int(old_meta.get("generation", 0)) + 1
        managed.write(stored, entries)
        errs = meta.validate_object_meta_update(stored_meta, old_meta)
        errs += meta.validate_object_meta(stored_meta, namespaced=res.namespaced, name_rule=res.strategy.name_rule)
        errs += res.strategy.validate(stored, existing, version=req.version)
        errs += self._schema_errors(req, stored, existing)
        if errs:
            raise e.invalid_object(res.group_kind, req.name, errs)
        served = self.external(res, req.version, stored)
        outcome = await self._admit(
            req,
            Attributes(
                res,
                req.version,
                req.subresource,
                "UPDATE",
                req.name,
                req.namespace,
                served,
                old_served,
                req.dry_run,
                self._options(req, options_kind),
            ),
        )
        req.warnings.extend(outcome.warnings)
        stored_meta["resourceVersion"] = old_meta.get("resourceVersion")
        if json_equal(stored, existing):
            return 200, old_served
        if req.dry_run:
            return 200, served
        return 200, self.commit_update(res, stored, existing, version=req.version)

    def _keep_system_fields(self, new_meta: Obj, old_meta: Obj) -> None:
        """rest.BeforeUpdate: what an update can never change."""
        if not new_meta.get("uid"):
            new_meta["uid"] = old_meta.get("uid")
        for key in ("creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"):
            if key in old_meta:
                new_meta[key] = old_meta[key]
            else:
                new_meta.pop(key, None)
        new_meta.pop("selfLink", None)
        if "name" not in new_meta:
            new_meta["name"] = old_meta.get("name")

    def commit_update(self, res: ResourceInfo, stored: Obj, existing: Obj, *, version: str) -> Obj:
        """Write an update; a deleting object whose last finalizer went away is deleted instead."""
        stored_meta = stored["metadata"]
        meta.drop_empty(stored_meta)
        namespace_held = res.storage_key == NAMESPACE_KEY and bool((stored.get("spec") or {}).get("finalizers"))
        if stored_meta.get("deletionTimestamp") and not stored_meta.get("finalizers") and not namespace_held:
            self.store.delete(res.storage_key, existing)
            self._after_delete(res, existing)
            # "clients are expecting an updated object if a PUT succeeded": the request's object.
            return self.external(res, version, stored)
        if res.storage_key == CRD_KEY:
            self._serve_crd(stored)
        committed = self.store.replace(res.storage_key, stored, existing)
        return self.external(res, version, committed)

    # ---- patch / apply -------------------------------------------------------------------------------

    async def patch(self, req: Request, raw: bytes, content_type: str) -> tuple[int, Obj]:
        res = req.res
        # CBOR apply patches are behind a feature gate that is off in v1.36: not listed, not accepted.
        accepted = (
            [patch.JSON_PATCH, patch.MERGE_PATCH, patch.APPLY_PATCH]
            if res.custom
            else [patch.JSON_PATCH, patch.MERGE_PATCH, patch.STRATEGIC_PATCH, patch.APPLY_PATCH]
        )
        if content_type not in accepted:
            raise e.unsupported_media_type(accepted)
        if content_type != patch.APPLY_PATCH and req.force is not None:
            raise e.invalid_object(
                GroupKind("meta.k8s.io", "PatchOptions"),
                "",
                [e.forbidden("force", "may not be specified for non-apply patch")],
            )
        existing = self.store.get(res.storage_key, req.namespace, req.name)
        if content_type == patch.APPLY_PATCH:
            return await self._apply(req, raw, existing)
        if existing is None:
            raise e.not_found(res.group_resource, req.name)
        try:
            body = json.loads(raw or b"null")
        except ValueError as err:
            raise e.bad_request(f"error decoding patch: {err}") from err
        current = deep_copy(self.external(res, req.version, existing))
        if content_type == patch.MERGE_PATCH:
            if not isinstance(body, dict):
                raise e.bad_request("json: cannot unmarshal into Go value of type map[string]interface {}")
            patched = patch.merge_patch(current, body)
        elif content_type == patch.JSON_PATCH:
            patched = patch.json_patch(current, body)
        else:
            patched = patch.strategic_merge_patch(current, body, plural=res.plural)
        new = self.decode(req, patched)
        return await self._update(req, new, existing, entries=None, options_kind="PatchOptions")

    async def _apply(self, req: Request, raw: bytes, existing: Obj | None) -> tuple[int, Obj]:
        res = req.res
        if not req.field_manager_param:
            raise e.invalid_object(
                GroupKind("meta.k8s.io", "PatchOptions"),
                "",
                [e.required("fieldManager", "is required for apply patch")],
            )
        try:
            config = yaml.safe_load(raw.decode() if raw else "")
        except (yaml.YAMLError, UnicodeDecodeError) as err:
            raise e.bad_request(f"error decoding YAML: {err}") from err
        if not isinstance(config, dict):
            raise e.bad_request("error decoding YAML: the body is not an object")
        config_meta = config.get("metadata")
        if not isinstance(config_meta, dict):
            config_meta = config["metadata"] = {}
        if "managedFields" in config_meta:
            raise e.bad_request("metadata.managedFields must be nil")
        if not config.get("apiVersion") or not config.get("kind"):
            raise e.bad_request(f"Object 'Kind' is missing in '{_compact(config)}'")
        config_name = config_meta.get("name", "")
        if config_name != req.name:
            raise e.bad_request(
                f"the name of the object ({config_name}) does not match the name on the URL ({req.name})"
            )
        config = self.decode_apply(req, config)
        if req.scope.status_split:
            if req.subresource == "status":
                config = {k: v for k, v in config.items() if k in ("apiVersion", "kind", "metadata", "status")}
                config["metadata"] = {k: v for k, v in config["metadata"].items() if k in ("name", "namespace")}
            else:
                config.pop("status", None)
        type_schema = self.type_schema(res, req.version)
        if existing is None:
            if req.subresource:
                raise e.not_found(res.group_resource, req.name)
            live: Obj = {"apiVersion": res.api_version(req.version), "kind": res.kind, "metadata": {"name": req.name}}
            if res.namespaced:
                live["metadata"]["namespace"] = req.namespace
            result = managed.apply(
                entries=[],
                live=live,
                config=config,
                schema=type_schema,
                manager=req.field_manager,
                api_version=res.api_version(req.version),
                scope=req.scope,
                force=bool(req.force),
                now=self.now(),
            )
            obj = self.normalize(req, result.obj)
            return await self._create(req, obj, entries=result.entries, options_kind="PatchOptions")
        current = deep_copy(self.external(res, req.version, existing))
        result = managed.apply(
            entries=managed.read(current),
            live=current,
            config=config,
            schema=type_schema,
            manager=req.field_manager,
            api_version=res.api_version(req.version),
            scope=req.scope,
            force=bool(req.force),
            now=self.now(),
        )
        new = self.normalize(req, result.obj)
        precondition = config.get("metadata", {}).get("resourceVersion")
        new.setdefault("metadata", {})["resourceVersion"] = precondition or existing["metadata"].get("resourceVersion")
        return await self._update(req, new, existing, entries=result.entries, options_kind="PatchOptions")

    def decode_apply(self, req: Request, config: Obj) -> Obj:
        """An applied configuration is type-checked and pruned, but not defaulted (it is partial)."""
        expected = req.res.api_version(req.version)
        if config.get("apiVersion") != expected:
            raise e.bad_request(
                f"the API version in the data ({config.get('apiVersion')}) does not match the expected API "
                f"version ({expected})"
            )
        if config.get("kind") != req.res.kind:
            raise e.bad_request(
                f"the kind in the data ({config.get('kind')}) does not match the expected kind ({req.res.kind})"
            )
        metadata = config["metadata"]
        if req.res.namespaced:
            if metadata.get("namespace") and metadata["namespace"] != req.namespace:
                raise e.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            metadata["namespace"] = req.namespace
        self._report_unknown(req, self._prune(req.res, req.version, config))
        return config

    # ---- delete -------------------------------------------------------------------------------------------

    async def delete(self, req: Request, options: Obj) -> tuple[int, Obj]:
        res = req.res
        existing = self.store.get(res.storage_key, req.namespace, req.name)
        if existing is None:
            raise e.not_found(res.group_resource, req.name)
        old_meta = existing["metadata"]
        preconditions = options.get("preconditions") or {}
        # rest.BeforeDelete checks them first, naming the kind (a GroupResource built from the GroupKind).
        kind = e.GroupResource(res.group, res.kind)
        if preconditions.get("uid") and preconditions["uid"] != old_meta.get("uid"):
            raise e.conflict(
                kind,
                req.name,
                f"the UID in the precondition ({preconditions['uid']}) does not match the UID in record "
                f"({old_meta.get('uid')}). The object might have been deleted and then recreated",
            )
        if preconditions.get("resourceVersion") and preconditions["resourceVersion"] != old_meta.get("resourceVersion"):
            raise e.conflict(
                kind,
                req.name,
                f"the ResourceVersion in the precondition ({preconditions['resourceVersion']}) does not match the "
                f"ResourceVersion in record ({old_meta.get('resourceVersion')}). The object might have been modified",
            )
        policy = _propagation(options)
        outcome = await self._admit(
            req,
            Attributes(
                res,
                req.version,
                "",
                "DELETE",
                req.name,
                req.namespace,
                None,
                self.external(res, req.version, existing),
                req.dry_run,
                {
                    "kind": "DeleteOptions",
                    "apiVersion": "meta.k8s.io/v1",
                    **({"propagationPolicy": policy} if policy else {}),
                },
            ),
        )
        req.warnings.extend(outcome.warnings)
        return 200, self.delete_object(res, existing, policy=policy, dry_run=req.dry_run, version=req.version)

    def delete_object(
        self, res: ResourceInfo, existing: Obj, *, policy: str | None, dry_run: bool, version: str
    ) -> Obj:
        """Delete now, or mark for deletion when finalizers (or the propagation policy) say so."""
        old_meta = existing["metadata"]
        finalizers = list(old_meta.get("finalizers") or [])
        if policy == "Orphan":
            finalizers = [f for f in finalizers if f != "foregroundDeletion"]
            if "orphan" not in finalizers:
                finalizers.append("orphan")
        elif policy == "Foreground":
            finalizers = [f for f in finalizers if f != "orphan"]
            if "foregroundDeletion" not in finalizers:
                finalizers.append("foregroundDeletion")
        elif policy == "Background":
            finalizers = [f for f in finalizers if f not in ("orphan", "foregroundDeletion")]
        if res.storage_key == CRD_KEY and CLEANUP_FINALIZER not in finalizers:
            finalizers.append(CLEANUP_FINALIZER)
        graceful = res.storage_key == NAMESPACE_KEY
        if finalizers or graceful:
            if old_meta.get("deletionTimestamp") and finalizers == list(old_meta.get("finalizers") or []):
                return self.external(res, version, existing)
            marked = deep_copy(existing)
            marked_meta = marked["metadata"]
            if not old_meta.get("deletionTimestamp"):
                marked_meta["deletionTimestamp"] = self.now()
                if not graceful:  # a namespace's deletion sets no grace period (seen on v1.36.2)
                    marked_meta["deletionGracePeriodSeconds"] = 0
                if int(marked_meta.get("generation", 0)) > 0:
                    marked_meta["generation"] = int(marked_meta["generation"]) + 1
            if finalizers:
                marked_meta["finalizers"] = finalizers
            else:
                marked_meta.pop("finalizers", None)
            if graceful:
                marked.setdefault("status", {})["phase"] = "Terminating"
            if res.storage_key == CRD_KEY:
                _set_condition(
                    marked,
                    {
                        "type": "Terminating",
                        "status": "True",
                        "lastTransitionTime": self.now(),
                        "reason": "InstanceDeletionPending",
                        "message": "CustomResourceDefinition marked for deletion; instance deletion will begin soon",
                    },
                )
            if dry_run:
                return self.external(res, version, marked)
            committed = self.store.replace(res.storage_key, marked, existing)
            if res.storage_key == CRD_KEY:
                self._serve_crd(committed)  # its resource now terminates
            return self.external(res, version, committed)
        if dry_run:
            last = existing
        else:
            last = self.store.delete(res.storage_key, existing)
            self._after_delete(res, existing)
        if res.strategy.return_deleted_object:
            return self.external(res, version, last)
        return e.success_status(res.group_resource, str(old_meta.get("name", "")), str(old_meta.get("uid", "")))

    async def delete_collection(
        self, req: Request, options: Obj, *, label_selector: str | None, field_selector: str | None
    ) -> Obj:
        matches = self.matcher(req, label_selector=label_selector, field_selector=field_selector)
        policy = _propagation(options)
        deleted = []
        for stored in self.store.items(req.res.storage_key, req.namespace or None):
            if not matches(stored):
                continue
            name = stored["metadata"]["name"]
            one = Request(req.res, req.version, stored["metadata"].get("namespace", ""), name, dry_run=req.dry_run)
            await self._admit(
                req,
                Attributes(
                    req.res,
                    req.version,
                    "",
                    "DELETE",
                    name,
                    one.namespace,
                    None,
                    self.external(req.res, req.version, stored),
                    req.dry_run,
                    {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"},
                ),
            )
            current = self.store.get(req.res.storage_key, one.namespace, name)
            if current is None:
                continue
            result = self.delete_object(req.res, current, policy=policy, dry_run=req.dry_run, version=req.version)
            deleted.append(result if result.get("kind") != "Status" else self.external(req.res, req.version, current))
        return {
            "kind": req.res.list_kind,
            "apiVersion": req.res.api_version(req.version),
            "metadata": {"resourceVersion": str(self.store.rv)},
            "items": deleted,
        }

    def _after_delete(self, res: ResourceInfo, last: Obj) -> None:
        if res.storage_key == CRD_KEY:
            spec = last.get("spec") or {}
            group = str(spec.get("group", ""))
            plural = str((spec.get("names") or {}).get("plural", ""))
            current = self.resources.get((group, plural))
            if current is not None and current.crd_uid == last["metadata"].get("uid"):
                self.unregister(group, plural)

    # ---- CRDs ---------------------------------------------------------------------------------------------

    def _serve_crd(self, crd: Obj) -> None:
        """Start (or keep) serving the resource a CRD defines."""
        if crd.get("metadata", {}).get("deletionTimestamp"):
            # Being deleted: its resources stay served for reading and deleting, creates are refused.
            spec = crd.get("spec") or {}
            key = (str(spec.get("group", "")), str((spec.get("names") or {}).get("plural", "")))
            current = self.resources.get(key)
            if current is not None and current.crd_uid == crd["metadata"].get("uid") and not current.terminating:
                current.terminating = True
                for hook in self.on_crd_change:
                    hook()
            return
        res = resource_from_crd(crd)
        existing = self.resources.get((res.group, res.plural))
        if existing is not None and not existing.custom:
            raise e.invalid_object(
                GroupKind("apiextensions.k8s.io", "CustomResourceDefinition"),
                str(crd["metadata"].get("name", "")),
                [e.invalid("spec.group", res.group, "conflicts with a built-in resource")],
            )
        if existing is not None:
            self.resources[(res.group, res.plural)] = res
            for hook in self.on_crd_change:
                hook()
        else:
            self.register(res)
        if existing is not None:
            self._redefault(res)

    def _redefault(self, res: ResourceInfo) -> None:
        """Defaults of a changed schema show on read, without a write (like defaulting from storage)."""
        open_api = res.schema(res.storage_version)
        if not open_api:
            return
        bucket = self.store._objects.get(res.storage_key, {})
        for key, stored in list(bucket.items()):
            updated = deep_copy(stored)
            schema.apply_defaults(updated, open_api)
            if not json_equal(updated, stored):
                bucket[key] = updated

    def _namespace_labels(self, namespace: str) -> dict[str, str] | None:
        stored = self.store.get(NAMESPACE_KEY, "", namespace)
        if stored is None:
            return None
        labels: dict[str, str] = stored.get("metadata", {}).get("labels") or {}
        return labels


def _content(obj: Obj, res: ResourceInfo, version: str) -> Obj:
    """What generation tracks: everything but metadata (and status when it is a subresource)."""
    skip = {"metadata", "apiVersion", "kind"}
    if res.has_status(version) or res.storage_key == CRD_KEY:
        skip.add("status")
    return {k: v for k, v in obj.items() if k not in skip}


def _drop_nulls(value: Any) -> None:
    if isinstance(value, dict):
        for key in [k for k, v in value.items() if v is None]:
            del value[key]
        for child in value.values():
            _drop_nulls(child)
    elif isinstance(value, list):
        for child in value:
            _drop_nulls(child)


def _positive_rv(value: Any) -> bool:
    try:
        return int(str(value)) > 0
    except ValueError:
        return False


def _propagation(options: Obj) -> str | None:
    policy = options.get("propagationPolicy")
    orphan = options.get("orphanDependents")
    if policy is not None and orphan is not None:
        raise e.invalid_object(
            GroupKind("meta.k8s.io", "DeleteOptions"),
            "",
            [e.invalid("propagationPolicy", policy, "orphanDependents and deletionPropagation cannot be both set")],
        )
    if policy is None and orphan is not None:
        return "Orphan" if orphan else "Background"
    if policy is not None and policy not in ("Orphan", "Background", "Foreground"):
        raise e.invalid_object(
            GroupKind("meta.k8s.io", "DeleteOptions"),
            "",
            [e.not_supported("propagationPolicy", policy, ["Foreground", "Background", "Orphan", "nil"])],
        )
    return str(policy) if policy is not None else None


def _set_condition(obj: Obj, condition: Obj) -> None:
    kind = condition["type"]
    conditions = [c for c in (obj.setdefault("status", {}).get("conditions") or []) if c.get("type") != kind]
    conditions.append(condition)
    obj["status"]["conditions"] = conditions


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return "null" if value is None else "object"


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _key(obj: Obj) -> tuple[str, str]:
    metadata = obj.get("metadata", {})
    return (str(metadata.get("namespace", "")), str(metadata.get("name", "")))


def _encode_continue(key: tuple[str, str], rv: int) -> str:
    import base64

    payload = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": f"{key[0]}/{key[1]}\x00"})
    return base64.urlsafe_b64encode(payload.encode()).decode()


def _decode_continue(token: str) -> tuple[tuple[str, str], int]:
    import base64

    try:
        payload = json.loads(base64.urlsafe_b64decode(token.encode()))
        namespace, _, name = str(payload["start"]).rstrip("\x00").partition("/")
        return (namespace, name), int(payload["rv"])
    except (ValueError, KeyError, TypeError) as err:
        raise e.bad_request(f"continue key is not valid: {err}") from err
