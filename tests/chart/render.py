"""Render the chart offline with the Helm engine (helm-python-sdk) and hand back parsed objects.

`render()` loads a fresh chart for every call: Helm's dependency processing removes disabled subcharts from
the loaded chart in place, and that is also how we learn which CRDs an install would create (`Chart.crds`
after rendering lists the chart's crds/ plus those of the subcharts whose condition holds — the same list
`helm install` hands to the API server).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import helm_python as helm
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
CHART_DIR = REPO_ROOT / "charts" / "modelbooster"
CHILD_CRDS_DIR = CHART_DIR / "charts" / "child-crds" / "crds"
MAIN_CRDS_DIR = CHART_DIR / "crds"
INFERNO_CRDS_DIR = CHART_DIR / "charts" / "inferno-crds" / "crds"
RELEASE = "mb"
NAMESPACE = "modelbooster-system"


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate mapping keys (PyYAML silently keeps the last one; the API server's
    strict decoding and kubectl do not)."""


def _construct_unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping)


def load_documents(text: str) -> list[dict[str, Any]]:
    """Every non-empty YAML document in `text`, refusing duplicate keys."""
    return [doc for doc in yaml.load_all(text, Loader=_UniqueKeyLoader) if doc]


@lru_cache(maxsize=64)
def _parse_crd_file(text: str) -> tuple[dict[str, Any], ...]:
    # CRD files are large (the ModelServing one is ~0.4 MB) and the same for every render: parse each once,
    # with the C loader. They are generated, so the duplicate-key check of templates is not needed here.
    return tuple(doc for doc in yaml.load_all(text, Loader=yaml.CSafeLoader) if doc)


@dataclass(frozen=True)
class Rendered:
    objects: list[dict[str, Any]]  # every object the templates produce, in template order
    notes: str
    crd_files: tuple[tuple[str, str], ...]  # (chart path, text) of the CRDs an install with these values creates

    @property
    def crds(self) -> list[dict[str, Any]]:
        """The CRD objects an install with these values would create (do not modify: they are shared)."""
        return [crd for _, text in self.crd_files for crd in _parse_crd_file(text)]

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [obj for obj in self.objects if obj["kind"] == kind]

    def one(self, kind: str, name: str) -> dict[str, Any]:
        found = [obj for obj in self.of_kind(kind) if obj["metadata"]["name"] == name]
        assert len(found) == 1, f"expected one {kind} {name}, found {len(found)}"
        return found[0]

    def deployment(self, component: str) -> dict[str, Any]:
        return self.one("Deployment", f"{RELEASE}-modelbooster-{component}")

    def armed(self) -> list[dict[str, Any]]:
        """The webhook configurations as they are enforced: with the entries the reconciler writes from their
        annotation (self-signed mode), or as rendered (cert-manager mode)."""
        armed = []
        for kind in WEBHOOK_CONFIGURATION_KINDS:
            for configuration in self.of_kind(kind):
                armed.append({**configuration, "webhooks": webhook_entries(configuration)})
        return armed


WEBHOOK_CONFIGURATION_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
# The annotation the chart puts the entries in, for the reconciler to arm (reconciler/certduty/arming.py).
ENTRIES_ANNOTATION = "modelbooster.io/webhooks"


def webhook_entries(configuration: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The entries a rendered webhook configuration is enforced with: its annotation's (then it renders no
    `webhooks`, which the reconciler writes once a webhook pod is ready) or its rendered `webhooks`."""
    text = (configuration["metadata"].get("annotations") or {}).get(ENTRIES_ANNOTATION)
    if text is None:
        entries: list[dict[str, Any]] = configuration["webhooks"]
        return entries
    assert "webhooks" not in configuration, "entries both rendered and in the annotation"
    parsed: list[dict[str, Any]] = json.loads(text)
    return parsed


# No image is published, so every install names one (the chart refuses to render without it); tests name this
# one unless they give `image.repository` themselves (or `with_image=False`, to see the refusal).
TEST_REPOSITORY = "registry.example/platform/modelbooster"


def with_test_image(values: Mapping[str, Any] | None) -> dict[str, Any]:
    """`values` with `image.repository` set to TEST_REPOSITORY where they leave it out."""
    given = dict(values or {})
    image = dict(given.get("image") or {})
    image.setdefault("repository", TEST_REPOSITORY)
    return {**given, "image": image}


def render(
    values: Mapping[str, Any] | None = None,
    *,
    release: str = RELEASE,
    namespace: str = NAMESPACE,
    with_image: bool = True,
) -> Rendered:
    chosen = with_test_image(values) if with_image else dict(values or {})
    with helm.Chart.load(CHART_DIR) as chart:
        manifests = chart.render(chosen, name=release, namespace=namespace, is_install=True)
        crd_files = tuple((crd["filename"], crd["data"]) for crd in chart.crds)
    notes = ""
    objects: list[dict[str, Any]] = []
    for path in sorted(manifests):
        if path.endswith("NOTES.txt"):
            notes = manifests[path]
        else:
            objects.extend(load_documents(manifests[path]))
    return Rendered(objects=objects, notes=notes, crd_files=crd_files)


def container_args(deployment: Mapping[str, Any], container: str) -> list[str]:
    for spec in deployment["spec"]["template"]["spec"]["containers"]:
        if spec["name"] == container:
            return list(spec.get("args") or [])
    raise AssertionError(f"no container {container} in {deployment['metadata']['name']}")


def flag_value(args: list[str], flag: str) -> str | None:
    """The value of `--flag=value` or `--flag value` in an argument list; None when absent."""
    for index, arg in enumerate(args):
        if arg.startswith(f"{flag}="):
            return arg.split("=", 1)[1]
        if arg == flag and index + 1 < len(args) and not args[index + 1].startswith("--"):
            return args[index + 1]
    return None


def selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector semantics (matchLabels and matchExpressions, ANDed)."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or ():
        key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True
