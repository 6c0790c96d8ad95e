"""`helm upgrade` from the previous chart to this one, with the real Helm engine (helm-python-sdk, Helm 4) on
the fake API server, as an operator does it: install 0.1.0 with default values, let the reconciler's
certificate duty leave its Secrets and caBundle (written here as it writes them), upgrade with default values,
then apply the CRDs as docs/chart.md says. What must hold: every Deployment runs the new image tag (so the pods
roll), nothing is deleted or recreated, the certificate Secrets stay, and the CRDs end as this
version generates them. The webhook configurations lose the entries 0.1.0 rendered (this version has the
reconciler write them once a webhook pod is ready).

The previous chart is taken from git history (`git archive` of the commit that released chart 0.1.0), so the
test skips with the reason when git or that history is absent (a shallow clone, a source tarball); CI runs in
a full clone. Helm keeps its release record in memory here (`storage_driver="memory"`): its Secrets driver
writes protobuf, which the fake does not speak; the chart's own objects are written as on a real cluster.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from io import BytesIO
from pathlib import Path
from typing import Any, Final

import helm_python as helm
import pytest
import yaml
from helm_python import _native
from kubernetes import client
from kubernetes.client import ApiException

from shared.crd_digest import DIGEST_ANNOTATION, judge
from shared.crds import expected_digests
from tests.chart.render import CHART_DIR, ENTRIES_ANNOTATION, NAMESPACE, RELEASE, REPO_ROOT
from tests.chart.scripts import load_script
from tests.fakeapi.server import FakeApiServer

# The last commit of chart 0.1.0 (its digest is the one charts/modelbooster.digests records for 0.1.0).
PREVIOUS_COMMIT: Final = "dc887e6"
PREVIOUS_VERSION: Final = "0.1.0"
FULLNAME: Final = f"{RELEASE}-modelbooster"
CERT_SECRETS: Final = (f"{FULLNAME}-webhook-tls", f"{FULLNAME}-webhook-ca")
APPLY: Final = "application/apply-patch+yaml"
# A documented CRD step: `kubectl apply --server-side --force-conflicts -f <directory>`.
_DOCUMENTED_APPLY: Final = re.compile(r"^kubectl apply --server-side --force-conflicts -f (?P<dir>\S+)", re.MULTILINE)
# Where the API serves each kind the chart renders, for reading objects back.
_PATHS: Final = {
    "CustomResourceDefinition": ("apiextensions.k8s.io/v1", "customresourcedefinitions", False),
    "ServiceAccount": ("v1", "serviceaccounts", True),
    "Service": ("v1", "services", True),
    "ConfigMap": ("v1", "configmaps", True),
    "Deployment": ("apps/v1", "deployments", True),
    "PodDisruptionBudget": ("policy/v1", "poddisruptionbudgets", True),
    "NetworkPolicy": ("networking.k8s.io/v1", "networkpolicies", True),
    "ClusterRole": ("rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ("rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "Role": ("rbac.authorization.k8s.io/v1", "roles", True),
    "RoleBinding": ("rbac.authorization.k8s.io/v1", "rolebindings", True),
    "MutatingWebhookConfiguration": ("admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations", False),
    "ValidatingWebhookConfiguration": ("admissionregistration.k8s.io/v1", "validatingwebhookconfigurations", False),
}


def _previous_chart(destination: Path) -> Path:
    """charts/modelbooster as of PREVIOUS_COMMIT, extracted into `destination`; skips when git cannot."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed: the previous chart comes from git history")
    try:
        archive = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "archive", "--format=tar", PREVIOUS_COMMIT, "charts/modelbooster"],
            capture_output=True,
            check=True,
            timeout=30,
        ).stdout
    except subprocess.CalledProcessError as error:
        pytest.skip(f"commit {PREVIOUS_COMMIT} (chart {PREVIOUS_VERSION}) is not in this clone: {error.stderr!r}")
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(destination, filter="data")
    return destination / "charts" / "modelbooster"


# An operator's own registry: nothing is published, so an install names its image, and so does every upgrade
# (the chart refuses to render without it).
IMAGE: Final = {"image": {"repository": "registry.example/platform/modelbooster"}}


def _release(cfg: helm.Config, action: str, chart: Path) -> dict[str, Any]:
    """`helm install|upgrade <RELEASE> <chart> -n NAMESPACE --set image.repository=...`, otherwise default values.

    Through the library's C call because its Python wrapper has no `disable_openapi_validation`: Helm's
    client-side validation downloads /openapi/v2, which the fake does not serve (kubernetes-validate checks
    every rendered object against Kubernetes' schemas in test_render.py instead).
    """
    options = {"namespace": NAMESPACE, "timeout_seconds": 30, "disable_openapi_validation": True}
    payload = _native.call_string(
        f"helm_{action}", cfg._raw(), cfg._context_arg(None), _native.HANDLE(0), str(chart), RELEASE, json.dumps(IMAGE),
        json.dumps(options),
    )  # fmt: skip
    release: dict[str, Any] = json.loads(payload)
    return release


def _manifest_objects(release: dict[str, Any]) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(release["manifest"]) if doc]


def _key(obj: dict[str, Any]) -> tuple[str, str, str]:
    return obj["kind"], obj["metadata"].get("namespace") or "", obj["metadata"]["name"]


def _read(fake: FakeApiServer, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
    api_version, plural, namespaced = _PATHS[kind]
    return fake.get(api_version, plural, name, (namespace or NAMESPACE) if namespaced else "")


def _uids(fake: FakeApiServer, keys: list[tuple[str, str, str]]) -> dict[tuple[str, str, str], str | None]:
    found = {}
    for kind, namespace, name in keys:
        obj = _read(fake, kind, namespace, name)
        found[(kind, namespace, name)] = None if obj is None else obj["metadata"]["uid"]
    return found


def _image(deployment: dict[str, Any]) -> str:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return str(container["image"])


def _leave_certificates(fake: FakeApiServer, api_client: Any) -> str:
    """What the reconciler's certificate duty writes in the default mode: two Secrets and the caBundle of both
    webhook configurations (as field manager `modelbooster`, with an update). Returns the caBundle."""
    bundle = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()
    for name in CERT_SECRETS:
        fake.create({
            "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "data": {"tls.crt": bundle, "tls.key": bundle, "ca.crt": bundle},
        })  # fmt: skip
    admission: Any = client.AdmissionregistrationV1Api(api_client)
    for read, replace in (
        (admission.read_mutating_webhook_configuration, admission.replace_mutating_webhook_configuration),
        (admission.read_validating_webhook_configuration, admission.replace_validating_webhook_configuration),
    ):
        configuration = read(FULLNAME)
        for webhook in configuration.webhooks:
            webhook.client_config.ca_bundle = bundle
        replace(FULLNAME, configuration, field_manager="modelbooster")
    return bundle


def _documented_crd_directories() -> list[Path]:
    """The directories docs/chart.md tells an operator to apply, in its order."""
    text = (REPO_ROOT / "docs" / "chart.md").read_text()
    upgrades = text[text.index("### Upgrades, CRDs and uninstalling") :]
    directories = [REPO_ROOT / match["dir"] for match in _DOCUMENTED_APPLY.finditer(upgrades)]
    assert directories, "docs/chart.md shows no `kubectl apply --server-side --force-conflicts -f` of the CRDs"
    return directories


def _load(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = yaml.load(path.read_text(), Loader=yaml.CSafeLoader)
    return document


def _files(directories: list[Path]) -> dict[str, dict[str, Any]]:
    documents = (_load(path) for directory in directories for path in sorted(directory.glob("*.yaml")))
    return {document["metadata"]["name"]: document for document in documents}


def _kubectl_apply(extensions: Any, directory: Path, *, force: bool) -> dict[str, str]:
    """`kubectl apply --server-side [--force-conflicts] -f <directory>`: each file applied as field manager
    `kubectl`; returns CRD name -> conflict message for those refused (kubectl goes on with the others)."""
    conflicts = {}
    for name, body in _files([directory]).items():
        try:
            extensions.patch_custom_resource_definition(
                name, body, field_manager="kubectl", force=force or None, _content_type=APPLY
            )
        except ApiException as error:
            if error.status != 409:
                raise
            conflicts[name] = json.loads(error.body)["message"]
    return conflicts


def _served_crds(extensions: Any) -> dict[str, dict[str, Any]]:
    listed = extensions.api_client.sanitize_for_serialization(extensions.list_custom_resource_definition())
    return {crd["metadata"]["name"]: crd for crd in listed["items"]}


@pytest.fixture
def helm_config(fake_apiserver: FakeApiServer, tmp_path: Path) -> Iterator[helm.Config]:
    fake_apiserver.create_namespace(NAMESPACE)
    kubeconfig = fake_apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    with helm.Config(kubeconfig_path=str(kubeconfig), namespace=NAMESPACE, storage_driver="memory") as cfg:
        yield cfg


def test_upgrade_from_the_previous_chart_rolls_new_code_and_keeps_everything(
    fake_apiserver: FakeApiServer, helm_config: helm.Config, kube_client: Any, tmp_path: Path
) -> None:
    previous = _previous_chart(tmp_path / "previous")
    recorded = load_script("chart_version").read_digests()
    assert load_script("chart_version").digest(previous) == recorded[PREVIOUS_VERSION]  # the released 0.1.0

    installed = _release(helm_config, "install", previous)
    assert installed["chart_version"] == PREVIOUS_VERSION
    bundle = _leave_certificates(fake_apiserver, kube_client)
    booster = yaml.safe_load((REPO_ROOT / "examples" / "single-vllm-cpu.yaml").read_text())
    booster["metadata"]["namespace"] = NAMESPACE
    kept = fake_apiserver.create(booster)  # stored under the old CRD (no webhook is running to admit it)
    before_objects = [_key(obj) for obj in _manifest_objects(installed)]
    crd_names = [("CustomResourceDefinition", "", name) for name in expected_digests()]
    before = _uids(fake_apiserver, before_objects + crd_names)
    assert None not in before.values()
    secrets = {name: fake_apiserver.get("v1", "secrets", name, NAMESPACE) for name in CERT_SECRETS}
    old_images = {
        name: _image(obj) for kind, _, name in before_objects if kind == "Deployment"
        for obj in [_read(fake_apiserver, kind, NAMESPACE, name)] if obj is not None
    }  # fmt: skip

    upgraded = _release(helm_config, "upgrade", CHART_DIR)

    chart = yaml.safe_load((CHART_DIR / "Chart.yaml").read_text())
    assert (upgraded["chart_version"], upgraded["app_version"]) == (chart["version"], chart["appVersion"])
    # New code: every Deployment's pod template names the new tag, so Kubernetes rolls its pods.
    for name, old_image in old_images.items():
        deployment = _read(fake_apiserver, "Deployment", NAMESPACE, name)
        assert deployment is not None
        assert old_image.endswith(f":{PREVIOUS_VERSION}")
        assert _image(deployment) != old_image, f"{name} keeps {old_image}: the upgrade would deliver no new code"
        assert _image(deployment) == old_image.rsplit(":", 1)[0] + f":{chart['appVersion']}", name
    assert len(old_images) == 2
    # Nothing deleted or recreated: every object of the old release, and every CRD, has the same uid.
    assert _uids(fake_apiserver, before_objects + crd_names) == before
    for name, secret in secrets.items():
        assert fake_apiserver.get("v1", "secrets", name, NAMESPACE) == secret
    for plural in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        configuration = fake_apiserver.get("admissionregistration.k8s.io/v1", plural, FULLNAME)
        assert configuration is not None
        # 0.1.0 rendered the entries; this version renders them into the annotation the reconciler arms them
        # from (docs/design/webhook.md §7), so Helm's server-side apply removes the entries it owned, caBundle
        # included, and the new reconciler writes them back (CHANGELOG, docs/chart.md "Upgrades").
        assert bundle
        assert not configuration.get("webhooks")
        assert json.loads(configuration["metadata"]["annotations"][ENTRIES_ANNOTATION])
    stored = fake_apiserver.get("workload.serving.volcano.sh/v1alpha1", "modelboosters", "qwen-small", NAMESPACE)
    assert stored is not None
    assert stored["metadata"]["uid"] == kept["metadata"]["uid"]

    # Helm left the CRDs of the first install: the reconciler's check calls every one outdated.
    extensions: Any = client.ApiextensionsV1Api(kube_client)
    served = _served_crds(extensions)
    verdicts = {
        name: judge(name, expected=digest, served_annotations=served[name]["metadata"].get("annotations") or {})
        for name, digest in expected_digests().items()
    }
    assert {verdict.verdict for verdict in verdicts.values()} == {"outdated"}

    # The documented step. Without --force-conflicts, exactly the CRDs whose schema changed conflict with Helm's
    # ownership of `.spec.versions` (the others are equal to what is stored, so the appliers share them) ...
    directories = _documented_crd_directories()
    # The documented commands cover every CRD directory the chart has (its own and each subchart's).
    shipped = {path.parent for path in CHART_DIR.rglob("crds/*.yaml")}
    assert set(directories) == shipped, f"docs/chart.md applies {sorted(map(str, directories))}"
    files = _files(directories)
    changed = {name for name, file in files.items() if served[name]["spec"]["versions"] != file["spec"]["versions"]}
    unforced: dict[str, str] = {}
    for directory in directories:
        unforced.update(_kubectl_apply(extensions, directory, force=False))
    assert set(unforced) == changed
    assert all(message.endswith(": .spec.versions") for message in unforced.values())
    # ... with it (as documented) every CRD ends exactly as this version generates it, and stays the same object.
    for directory in directories:
        assert _kubectl_apply(extensions, directory, force=True) == {}
    served = _served_crds(extensions)
    for name, digest in expected_digests().items():
        annotations = served[name]["metadata"]["annotations"]
        assert judge(name, expected=digest, served_annotations=annotations).verdict == "current"
        assert annotations[DIGEST_ANNOTATION] == digest
        assert served[name]["spec"]["versions"] == files[name]["spec"]["versions"], name
    assert _uids(fake_apiserver, crd_names) == {key: before[key] for key in crd_names}
    # Re-running the documented step changes nothing and conflicts with nobody.
    versions = {name: crd["metadata"]["resourceVersion"] for name, crd in served.items()}
    for directory in directories:
        assert _kubectl_apply(extensions, directory, force=False) == {}
    assert {name: crd["metadata"]["resourceVersion"] for name, crd in _served_crds(extensions).items()} == versions
    assert upgraded["status"] == "deployed"
