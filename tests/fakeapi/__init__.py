"""A fake Kubernetes API server for tests: real HTTP, real `kubernetes` client, real watches.

Test support only (not shipped). Start it with the pytest fixtures in `tests.fakeapi.fixtures`
(`fake_apiserver` runs it on a background thread so the blocking client works; `kube_config`,
`kube_client`, `aio_kube_config`, `aio_kube_client`, `kubeconfig_file`), with `FakeApiServer`
(`with FakeApiServer() as s` on a thread, `async with FakeApiServer() as s` on your loop), or as a process:
`python -m tests.fakeapi --port 0 --kubeconfig FILE [--crd FILE] [--tls]` (prints one JSON line with the URL
when ready; serves until SIGINT/SIGTERM).

Modules: `app` (routing, query options, watch streams), `rest` (create/update/patch/apply/delete in
kube-apiserver's order), `store` (objects, the resourceVersion counter), `watch` (history, watchers),
`schema` + `cel` (custom resource pruning, defaulting, validation), `fieldpath` + `managed` (managed fields,
server-side apply), `patch`, `selectors`, `meta` (ObjectMeta rules), `builtin` + `stored_kinds` + `crds` (kinds),
`admission` (webhooks), `controllers` (garbage collector, namespace and CRD finalizers), `faults`,
`reqlog`, `discovery`, `errors` (Status bodies and field errors), `server` (running it), `tls`, `main`.

What it emulates (pinned by tests/apiserver/):
- Paths: `/api/v1/...`, `/apis/<group>/<version>/[namespaces/<ns>/]<plural>[/<name>[/status]]`, the
  legacy `/watch/` prefix, lists across namespaces; discovery (`/api`, `/apis`, `/apis/<g>[/<v>]`),
  `/version`, `/healthz`.
- Kinds: custom resources of any CRD created through
  `POST /apis/apiextensions.k8s.io/v1/customresourcedefinitions` (all served versions, conversion
  `None`); core `namespaces`, `configmaps`, `secrets`, `pods`, `events`; `events.k8s.io/v1` events (same
  objects as core events, fields renamed); `coordination.k8s.io/v1` leases; admissionregistration/v1
  mutating and validating webhook configurations; stored without behaviour (`stored_kinds`, what `helm
  install` of the chart writes): service accounts, services, deployments, pod disruption budgets, network
  policies and the RBAC kinds. CRDs are stored as kube-apiserver stores them: the empty schema pieces Go's
  `omitempty` drops are dropped, and `.spec.versions` is one atomic list for server-side apply.
- Status codes and Status bodies as kube-apiserver words them: 201 on create, NotFound, AlreadyExists,
  Conflict, Invalid (422 with `details.causes`), BadRequest, Expired (410), MethodNotAllowed,
  UnsupportedMediaType, InternalError; warnings as `Warning: 299 - "..."` headers.
- Metadata: uid, creationTimestamp, generateName, one global resourceVersion, generation bumped only
  when something other than metadata/status changes (and when deletion starts), optimistic concurrency
  (stale PUT -> 409; CR PUT without resourceVersion -> 422 "must be specified for an update"),
  `resourceVersion should not be set on objects to be created` (500) like the real server, name, label,
  annotation, ownerReference and finalizer validation, namespaces that must exist and not be terminating.
- Status subresource split: the main endpoint ignores `.status`, `/status` ignores everything else.
- Selectors: label selectors (=, ==, !=, in, notin, exists, !exists, gt, lt); field selectors
  metadata.name / metadata.namespace plus the kind-specific ones (events' involvedObject.*, pods'
  status.phase, ...); unsupported fields are a 400 like the real server's.
- Writes: PUT, JSON merge patch, JSON patch, strategic merge patch (built-in kinds only; 415 for custom
  resources), server-side apply (`application/apply-patch+yaml`, fieldManager required, `force`), dryRun.
  managedFields are tracked for every write: Update operations take the fields they change, Apply
  merges (list-map/set semantics from `x-kubernetes-list-type`), removes fields the applier dropped
  when nobody else owns them, and reports conflicts (409, one cause per field) unless forced. An apply
  that creates answers 201; one that changes nothing answers 200 without a write (same
  resourceVersion, no watch event) — as does any no-op update.
- Watch: newline-delimited JSON, ADDED/MODIFIED/DELETED/BOOKMARK/ERROR; synthetic ADDED for existing
  objects when no resourceVersion is given; resume from a resourceVersion with no gap and no repeat;
  `410 Expired` ERROR event when it is older than the retained history (`history_size` events per
  resource, or `expire_history()`); `allowWatchBookmarks` (every `bookmark_interval` s and before
  `timeoutSeconds` ends the stream, never ahead of an event still queued for that watcher: a client resumes
  from a bookmark); `sendInitialEvents` with the initial-events-end bookmark; selector
  transitions (an object that stops matching is DELETED for that watcher); a watch from a future
  resourceVersion stays open without an error and sends only what follows it.
- Custom resources: structural pruning (unknown fields dropped with a warning, or a 400 with
  `fieldValidation=Strict`), `nullable`, defaulting (also after mutating webhooks), OpenAPI validation
  (type, enum, bounds, lengths, pattern, required, items/properties counts, list-type set/map
  uniqueness, allOf/anyOf/oneOf/not) with kube-apiserver's messages, and CEL `x-kubernetes-validations`
  for the subset in `cel.py` (has, size, equality/comparison, boolean logic, `self`/`oldSelf` transition
  rules, `optionalOldSelf` with hasValue/value/orValue, all/exists/exists_one/map/filter) with `message`,
  `reason` and `fieldPath`. Validation runs on every write: metadata-only updates, status-subresource
  writes (OpenAPI schema of `status` only, CEL rules on the whole object, as the status strategy does) and
  the garbage collector's. Transition rules run only where the old value correlates (map keys, list-type
  map items), except with `optionalOldSelf` (then also on create, `oldSelf` none). Updates are ratcheted
  like v1.36: an OpenAPI error or a failed rule without `oldSelf` is spared (a rule failure as a warning)
  when the value at its node — or at the nearest correlatable node above it — is unchanged, as
  apiextensions' CachedDeepEqual decides: a map reaching an `x-kubernetes-preserve-unknown-fields` subtree
  through maps never counts as unchanged, while atomic lists are compared whole, free-form values inside
  them included; CEL equality over a free-form value is false (all as observed on v1.36.2, the first two
  through tests/realapi's differential suite). After an OpenAPI error of a blocking kind (type, required,
  enum, too long, too many) CEL rules are not run and `<nil>: ... some validation rules were not checked`
  is reported instead; status-subresource messages name paths below `status`. CRDs whose rules are
  estimated over the CEL cost budget are refused (approximate estimate; see below), as are `oldSelf`
  below an atomic or set list ("oldSelf cannot be used on the uncorrelatable portion of the schema
  within ...") and `optionalOldSelf` on a rule without `oldSelf`.
- Deletion: finalizers and deletionTimestamp (+ generation bump), deletion once the last finalizer is
  removed, preconditions, propagationPolicy Background / Foreground / Orphan, ownerReference garbage
  collection like kube-controller-manager (dependents whose owners are all gone are deleted, dangling
  references removed when another owner lives) whose writes are requests through admission webhooks and
  validation as `system:serviceaccount:kube-system:generic-garbage-collector` (DELETE with a uid
  precondition; JSON merge patches for ownerReferences and for removing `orphan`/`foregroundDeletion`), so
  an object validation refuses stays terminating, retried with backoff (`gc_failures()` says why);
  namespace deletion deleting its content, CRD deletion deleting its custom resources. DELETE answers like
  the real registry: the object for pods and namespaces, a `Status` (Success) for custom resources and
  other kinds deleted at once, the object with deletionTimestamp when finalizers hold it.
- Admission webhooks from stored Mutating/ValidatingWebhookConfigurations over HTTPS with caBundle
  verification (service references routed with `route_service`, or `clientConfig.url`), rules,
  namespace/object selectors, JSON patches, failurePolicy, timeoutSeconds, sideEffects on dry runs,
  denials worded `admission webhook "<name>" denied the request: <message>`.
- Test hooks: `faults` (fail / delay / reset the next N matching requests), `close_watches`,
  `stall_watches`, `expire_history`, `requests` (log with per-verb counts), `settle()`, `gc_failures()`.

What it does NOT emulate (do not rely on it against the fake):
- Authentication and authorization (any or no token is accepted; RBAC is not checked); the userInfo
  sent to webhooks is `AdmissionSettings.user_info`.
- Protobuf, CBOR and Table output (always JSON); protobuf/CBOR request bodies get 415; `/openapi/v2|v3`
  (404). kubectl works for get/apply/delete/label/api-resources with `--validate=false` (client-side and
  `--server-side` apply); imperative `kubectl create configmap|namespace|...` sends protobuf and fails.
  Aggregated discovery is not served (kubectl falls back to the legacy documents).
- Subresources other than `status` (scale, log, exec, eviction, binding, finalize).
- Built-in kinds beyond the list above, and most of their defaulting/validation (pods get a few defaults
  and a Pending status; no scheduler, kubelet, services, deployments...). Built-in kinds are pruned only at
  the top level and in metadata.
- CEL beyond the subset (string/regex/time functions, optionals other than `oldSelf`'s, messageExpression,
  CEL in webhook matchConditions or ValidatingAdmissionPolicy): such rules are ignored, not guessed. The CEL cost
  estimate is approximate: it refuses rules that compare or loop over unbounded strings/lists/maps, but
  its numbers differ from the real estimator's.
- CRD schema checks are partial (types present, list-map keys, one storage version, names); default
  values are not validated at CRD creation; conversion webhooks are not supported.
- Mutating webhook reinvocation (`reinvocationPolicy: IfNeeded`), matchConditions, admission
  review v1beta1, webhook client certificates; the wording of transport errors is approximate.
- Writes by the namespace and CRD finalizers skip admission webhooks and validation.
- resourceVersion semantics on GET/LIST (always the latest state), `resourceVersionMatch`, consistent
  pagination snapshots (continue tokens resume by key, not from a snapshot), watch-cache progress
  notifications (a real server's watch without resourceVersion waits for its cache to reach etcd's
  revision: over an etcd without progress notifications, such as Debian's 3.4, that is a 504 "Too large
  resource version" ERROR event after 3 s when other kinds were written meanwhile; the fake answers at once),
  graceful pod deletion (pods are deleted at once), server-side apply's cap of ten Update managers and
  version conversion of managed fields.
- The Go decoder's wording for a body that is not an object or holds another kind (both a 400 BadRequest).
- Typed defaults and managed-field shapes of built-in kinds beyond Namespaces, Leases and Events.
- Differences from a real kube-apiserver v1.36 are measured by tests/realapi's differential suite (the same
  request scenarios against both; known ones listed, with the reason, in its `ALLOWED`).
- Messages follow current kube-apiserver (1.32+): e.g. maxLength says "may not be more than N bytes"
  (1.24 said "may not be longer than N") and CEL failures on objects print no value.
"""

from tests.fakeapi.admission import AdmissionSettings
from tests.fakeapi.app import ServerConfig
from tests.fakeapi.server import FakeApiServer

__all__ = ["AdmissionSettings", "FakeApiServer", "ServerConfig"]
