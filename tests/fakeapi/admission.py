"""Admission webhooks, called the way kube-apiserver calls them.

For each CREATE/UPDATE/DELETE the fake finds the Mutating/ValidatingWebhookConfiguration objects stored
in it whose rules, namespaceSelector and objectSelector match, POSTs an `admission.k8s.io/v1`
AdmissionReview over HTTPS (verifying the server with the configuration's `caBundle`), applies returned
JSON patches, honours `failurePolicy`, `timeoutSeconds` and `sideEffects` on dry runs, and turns a denial
into the Status kube-apiserver returns (`admission webhook "<name>" denied the request: <message>`).

Webhooks configured with `clientConfig.service` cannot be resolved in a test, so the fake is told where
each service listens: `AdmissionSettings.service_overrides[(namespace, name, port)] = (host, port)`. TLS
is still verified against the service's DNS name `<name>.<namespace>.svc`, like the real server does.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import ssl
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import aiohttp
import jsonpatch
import yarl

from tests.fakeapi import errors
from tests.fakeapi.resources import ResourceInfo
from tests.fakeapi.selectors import label_matcher

Obj = dict[str, Any]

MUTATING_KEY: Final = "mutatingwebhookconfigurations.admissionregistration.k8s.io"
VALIDATING_KEY: Final = "validatingwebhookconfigurations.admissionregistration.k8s.io"
_EXEMPT_GROUPS: Final = frozenset({"admissionregistration.k8s.io"})

DEFAULT_USER: Final[Obj] = {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]}


@dataclass
class AdmissionSettings:
    # (service namespace, service name, service port) -> (host, port) actually listening.
    service_overrides: dict[tuple[str, str, int], tuple[str, int]] = field(default_factory=dict)
    user_info: Obj = field(default_factory=lambda: dict(DEFAULT_USER))


@dataclass
class Attributes:
    """What is being admitted (admission.Attributes)."""

    resource: ResourceInfo
    version: str
    subresource: str
    operation: str  # CREATE, UPDATE, DELETE
    name: str
    namespace: str
    obj: Obj | None  # served form at `version`
    old: Obj | None
    dry_run: bool
    options: Obj
    user_info: Obj | None = None  # None: AdmissionSettings.user_info


@dataclass
class Outcome:
    obj: Obj | None
    warnings: list[str] = field(default_factory=list)


class WebhookCallError(Exception):
    """Calling the webhook failed (transport, TLS, timeout, malformed response)."""


def _rule_matches(rule: Obj, attrs: Attributes) -> bool:
    operations = rule.get("operations") or []
    if "*" not in operations and attrs.operation not in operations:
        return False
    groups = rule.get("apiGroups") or []
    if "*" not in groups and attrs.resource.group not in groups:
        return False
    versions = rule.get("apiVersions") or []
    if "*" not in versions and attrs.version not in versions:
        return False
    scope = rule.get("scope", "*")
    if scope == "Cluster" and attrs.resource.namespaced:
        return False
    if scope == "Namespaced" and not attrs.resource.namespaced:
        return False
    wanted = f"{attrs.resource.plural}/{attrs.subresource}" if attrs.subresource else attrs.resource.plural
    for resource in rule.get("resources") or []:
        if resource in (wanted, "*/*"):
            return True
        base, _, sub = resource.partition("/")
        if not attrs.subresource:
            if resource == "*":
                return True
            continue
        if (base in ("*", attrs.resource.plural)) and sub in ("*", attrs.subresource):
            return True
    return False


def _selector_text(selector: Obj | None) -> str:
    """A LabelSelector (matchLabels/matchExpressions) as selector syntax."""
    if not selector:
        return ""
    parts = [f"{k}={v}" for k, v in (selector.get("matchLabels") or {}).items()]
    for expression in selector.get("matchExpressions") or []:
        key = expression.get("key", "")
        values = ",".join(expression.get("values") or [])
        operator = expression.get("operator")
        if operator == "In":
            parts.append(f"{key} in ({values})")
        elif operator == "NotIn":
            parts.append(f"{key} notin ({values})")
        elif operator == "Exists":
            parts.append(key)
        elif operator == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)


class Admission:
    def __init__(
        self,
        *,
        settings: AdmissionSettings,
        list_configs: Callable[[str], list[Obj]],
        namespace_labels: Callable[[str], dict[str, str] | None],
    ) -> None:
        self.settings = settings
        self._list_configs = list_configs
        self._namespace_labels = namespace_labels
        self._session: aiohttp.ClientSession | None = None
        self.calls: list[tuple[str, Obj]] = []  # (webhook name, AdmissionReview request) for tests

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
            # Let TLS connections finish their close handshakes (aiohttp's graceful-shutdown advice).
            await asyncio.sleep(0.05)

    def _webhooks(self, key: str, attrs: Attributes) -> list[Obj]:
        if attrs.resource.group in _EXEMPT_GROUPS:
            return []
        chosen = []
        for config in sorted(self._list_configs(key), key=lambda c: c.get("metadata", {}).get("name", "")):
            for webhook in config.get("webhooks") or []:
                if self._matches(webhook, attrs):
                    chosen.append(webhook)
        return chosen

    def _matches(self, webhook: Obj, attrs: Attributes) -> bool:
        if not any(_rule_matches(rule, attrs) for rule in webhook.get("rules") or []):
            return False
        namespace_selector = _selector_text(webhook.get("namespaceSelector"))
        if namespace_selector:
            if attrs.resource.namespaced:
                labels = self._namespace_labels(attrs.namespace) or {}
                if not label_matcher(namespace_selector)({"metadata": {"labels": labels}}):
                    return False
            elif attrs.resource.plural == "namespaces" and attrs.resource.group == "":
                target = attrs.obj or attrs.old or {}
                if not label_matcher(namespace_selector)(target):
                    return False
        object_selector = _selector_text(webhook.get("objectSelector"))
        if object_selector:
            matcher = label_matcher(object_selector)
            candidates = [o for o in (attrs.obj, attrs.old) if o is not None]
            if not any(matcher(o) for o in candidates):
                return False
        return True

    def _check_dry_run(self, webhook: Obj, attrs: Attributes) -> None:
        if attrs.dry_run and webhook.get("sideEffects") not in ("None", "NoneOnDryRun"):
            raise errors.bad_request(
                f'admission webhook "{webhook.get("name", "")}" has side effects and does not support dry run'
            )

    def _review(self, attrs: Attributes, obj: Obj | None) -> Obj:
        res = attrs.resource
        kind = {"group": res.group, "version": attrs.version, "kind": res.kind}
        resource = {"group": res.group, "version": attrs.version, "resource": res.plural}
        request: Obj = {
            "uid": str(uuid.uuid4()),
            "kind": kind,
            "resource": resource,
        }
        if attrs.subresource:
            request["subResource"] = attrs.subresource
        request.update(
            {
                "requestKind": dict(kind),
                "requestResource": dict(resource),
            }
        )
        if attrs.subresource:
            request["requestSubResource"] = attrs.subresource
        if attrs.name:
            request["name"] = attrs.name
        if attrs.namespace:
            request["namespace"] = attrs.namespace
        request.update(
            {
                "operation": attrs.operation,
                "userInfo": attrs.user_info or self.settings.user_info,
                "object": obj,
                "oldObject": attrs.old,
                "dryRun": attrs.dry_run,
                "options": attrs.options,
            }
        )
        return {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": request}

    async def mutate(self, attrs: Attributes, *, normalize: Callable[[Obj], Obj]) -> Outcome:
        """Run matching mutating webhooks in order; `normalize` re-prunes/defaults after each patch."""
        obj = attrs.obj
        warnings: list[str] = []
        for webhook in self._webhooks(MUTATING_KEY, attrs):
            self._check_dry_run(webhook, attrs)
            response = await self._call_or_fail(webhook, self._review(attrs, obj))
            if response is None:
                continue
            warnings.extend(str(w) for w in response.get("warnings") or [])
            if not response.get("allowed"):
                raise denial(str(webhook.get("name", "")), response.get("status"))
            patch = response.get("patch")
            if patch and obj is not None:
                if response.get("patchType") != "JSONPatch":
                    raise errors.internal(
                        f'failed calling webhook "{webhook.get("name")}": '
                        f'unsupported patch type "{response.get("patchType", "")}"'
                    )
                try:
                    operations = json.loads(base64.b64decode(patch))
                    obj = jsonpatch.JsonPatch(operations).apply(obj)
                except (ValueError, TypeError, jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as err:
                    raise errors.internal(f"JSON Patch: {err}") from err
                if isinstance(obj, dict):
                    obj = normalize(obj)
        return Outcome(obj, warnings)

    async def validate(self, attrs: Attributes) -> Outcome:
        """Run matching validating webhooks concurrently; the first denial in configuration order wins."""
        webhooks = self._webhooks(VALIDATING_KEY, attrs)
        for webhook in webhooks:
            self._check_dry_run(webhook, attrs)
        results = await asyncio.gather(
            *(self._call_or_fail(w, self._review(attrs, attrs.obj)) for w in webhooks), return_exceptions=True
        )
        warnings: list[str] = []
        for webhook, result in zip(webhooks, results, strict=True):
            if isinstance(result, BaseException):
                raise result
            if result is None:
                continue
            warnings.extend(str(w) for w in result.get("warnings") or [])
            if not result.get("allowed"):
                raise denial(str(webhook.get("name", "")), result.get("status"))
        return Outcome(attrs.obj, warnings)

    async def _call_or_fail(self, webhook: Obj, review: Obj) -> Obj | None:
        name = str(webhook.get("name", ""))
        self.calls.append((name, review["request"]))
        try:
            return await self._call(webhook, review)
        except WebhookCallError as err:
            if webhook.get("failurePolicy", "Fail") == "Ignore":
                return None
            raise errors.internal(f'failed calling webhook "{name}": {err}') from err

    def _endpoint(self, client: Obj) -> tuple[str, str, str]:
        """(url shown in messages, url to connect to, TLS server name)."""
        if client.get("url"):
            url = str(client["url"])
            host = yarl.URL(url).host or ""
            return url, url, host
        service = client.get("service") or {}
        namespace = str(service.get("namespace", ""))
        name = str(service.get("name", ""))
        port = int(service.get("port", 443))
        path = str(service.get("path", "") or "")
        server_name = f"{name}.{namespace}.svc"
        shown = f"https://{server_name}:{port}{path}"
        target = self.settings.service_overrides.get((namespace, name, port))
        if target is None:
            raise WebhookCallError(
                f'failed to call webhook: Post "{shown}": dial tcp: lookup {server_name}: no such host'
            )
        return shown, f"https://{target[0]}:{target[1]}{path}", server_name

    async def _call(self, webhook: Obj, review: Obj) -> Obj:
        client = webhook.get("clientConfig") or {}
        timeout = int(webhook.get("timeoutSeconds", 10))
        shown, url, server_name = self._endpoint(client)
        shown_url = f"{shown}?timeout={timeout}s"
        context = ssl.create_default_context()
        bundle = client.get("caBundle")
        if bundle:
            try:
                context = ssl.create_default_context(cadata=base64.b64decode(bundle).decode())
            except (ValueError, ssl.SSLError) as err:
                raise WebhookCallError(f"could not get REST client: unable to load root certificates: {err}") from err
        if "v1" not in (webhook.get("admissionReviewVersions") or []):
            # kube-apiserver would fall back to v1beta1; the fake only speaks v1 (documented).
            raise WebhookCallError("webhook does not accept v1 or v1beta1 AdmissionReview")
        if self._session is None:
            self._session = aiohttp.ClientSession()
        try:
            async with self._session.post(
                url,
                params={"timeout": f"{timeout}s"},
                json=review,
                ssl=context,
                server_hostname=server_name,
                headers={"Accept": "application/json, */*"},
                timeout=aiohttp.ClientTimeout(total=timeout),
            ) as answer:
                body = await answer.read()
                status = answer.status
        except TimeoutError as err:
            raise WebhookCallError(f'failed to call webhook: Post "{shown_url}": context deadline exceeded') from err
        except aiohttp.ClientConnectorCertificateError as err:
            raise WebhookCallError(
                f'failed to call webhook: Post "{shown_url}": tls: failed to verify certificate: '
                f"{err.certificate_error.reason if hasattr(err.certificate_error, 'reason') else err}"
            ) from err
        except aiohttp.ClientError as err:
            raise WebhookCallError(f'failed to call webhook: Post "{shown_url}": {_describe(err)}') from err
        if status != 200:
            raise WebhookCallError(
                f"received invalid webhook response: the server responded with the status code {status} "
                "but did not return more information"
            )
        try:
            answer_review = json.loads(body)
        except ValueError as err:
            raise WebhookCallError(f"received invalid webhook response: {err}") from err
        return _check_response(answer_review, review["request"]["uid"])


def _describe(err: aiohttp.ClientError) -> str:
    if isinstance(err, aiohttp.ClientConnectorError):
        # Go prints the errno's text, as the C library words it in lower case ("connection refused"); Python's
        # own message adds the address ("Connect call failed ('127.0.0.1', 1)").
        code = err.os_error.errno
        reason = os.strerror(code).lower() if code else str(err.os_error.strerror or err.os_error).lower()
        return f"dial tcp {err.host}:{err.port}: connect: {reason}"
    return str(err) or type(err).__name__


def _check_response(review: Any, uid: str) -> Obj:
    if not isinstance(review, dict):
        raise WebhookCallError("received invalid webhook response: expected an AdmissionReview object")
    if review.get("apiVersion") != "admission.k8s.io/v1" or review.get("kind") != "AdmissionReview":
        raise WebhookCallError(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got "
            f"{review.get('apiVersion', '')}, Kind={review.get('kind', '')}"
        )
    response = review.get("response")
    if not isinstance(response, dict):
        raise WebhookCallError("webhook response was absent")
    if response.get("uid") != uid:
        raise WebhookCallError(f'expected response.uid="{uid}", got "{response.get("uid", "")}"')
    return response


def denial(webhook_name: str, status: Any) -> errors.ApiError:
    """webhookerrors.ToStatusErr: how a denial reaches the client."""
    result: Obj = dict(status) if isinstance(status, dict) else {}
    raw_code = result.get("code")
    code = max(raw_code if isinstance(raw_code, int) else 0, 400)
    denied_by = f'admission webhook "{webhook_name}" denied the request'
    if result.get("message"):
        message = f"{denied_by}: {result['message']}"
    elif result.get("reason"):
        message = f"{denied_by}: {result['reason']}"
    else:
        message = f"{denied_by} without explanation"
    details = result.get("details") if isinstance(result.get("details"), dict) else None
    return errors.ApiError(code, str(result.get("reason", "")), message, details)
