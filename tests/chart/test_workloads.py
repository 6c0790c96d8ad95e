"""Both Deployments: hardened security context, probes on the health endpoints, availability settings."""

from __future__ import annotations

from typing import Any

import pytest

from tests.chart.dockerfile import final_stage_user
from tests.chart.render import NAMESPACE, Rendered, container_args, flag_value, render, selector_matches
from tests.chart.scenarios import SCENARIOS

COMPONENTS = ("webhook", "reconciler")


def _deployments(rendered: Rendered) -> list[dict[str, Any]]:
    deployments = rendered.of_kind("Deployment")
    assert deployments
    return deployments


def _containers(deployment: dict[str, Any]) -> list[dict[str, Any]]:
    pod = deployment["spec"]["template"]["spec"]
    containers: list[dict[str, Any]] = pod["containers"] + pod.get("initContainers", [])
    return containers


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_container_is_hardened(rendered_scenarios: dict[str, Rendered], scenario: str) -> None:
    uid, gid = final_stage_user()
    for deployment in _deployments(rendered_scenarios[scenario]):
        pod = deployment["spec"]["template"]["spec"]
        pod_context = pod["securityContext"]
        assert pod_context["runAsNonRoot"] is True
        assert pod_context["seccompProfile"] == {"type": "RuntimeDefault"}
        assert pod.get("hostNetwork") is not True
        assert pod.get("hostPID") is not True
        for container in _containers(deployment):
            context = container["securityContext"]
            where = (deployment["metadata"]["name"], container["name"])
            assert context["allowPrivilegeEscalation"] is False, where
            assert context.get("privileged") is not True, where
            assert context["readOnlyRootFilesystem"] is True, where
            assert context["runAsNonRoot"] is True, where
            assert context["capabilities"]["drop"] == ["ALL"], where
            assert not context["capabilities"].get("add"), where
            assert context["seccompProfile"] == {"type": "RuntimeDefault"}, where
            # The uid the image declares, so files the image owns stay readable with runAsNonRoot.
            assert (context["runAsUser"], context["runAsGroup"]) == (uid, gid), where


def test_writable_scratch_space_is_an_empty_dir(defaults: Rendered) -> None:
    # With a read-only root filesystem, /tmp must be a volume or tempfile users fail.
    for deployment in _deployments(defaults):
        pod = deployment["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        (tmp,) = [m for m in container["volumeMounts"] if m["mountPath"] == "/tmp"]
        (volume,) = [v for v in pod["volumes"] if v["name"] == tmp["name"]]
        assert "emptyDir" in volume


@pytest.mark.parametrize("component", COMPONENTS)
def test_probes_use_the_health_endpoints_on_a_declared_port(defaults: Rendered, component: str) -> None:
    deployment = defaults.deployment(component)
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    for probe in ("livenessProbe", "readinessProbe"):
        get = container[probe]["httpGet"]
        assert get.get("scheme", "HTTP") == "HTTP"  # the plain-HTTP port: no certificate needed to probe
        assert ports[get["port"]] == int(flag_value(container_args(deployment, component), "--metrics-port") or 0)
    assert ports["metrics"] == 8080


def test_webhook_runs_two_replicas_spread_over_nodes_with_a_pdb(defaults: Rendered) -> None:
    deployment = defaults.deployment("webhook")
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    (term,) = deployment["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"
    ]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert selector_matches(term["podAffinityTerm"]["labelSelector"], pod_labels)
    (pdb,) = defaults.of_kind("PodDisruptionBudget")
    assert pdb["spec"]["minAvailable"] == 1
    assert selector_matches(pdb["spec"]["selector"], pod_labels)
    reconciler_labels = defaults.deployment("reconciler")["spec"]["template"]["metadata"]["labels"]
    assert not selector_matches(pdb["spec"]["selector"], reconciler_labels)


def test_user_affinity_replaces_the_default_anti_affinity() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["system"]}]}]
            }
        }
    }
    pod = render({"webhook": {"affinity": affinity}}).deployment("webhook")["spec"]["template"]["spec"]
    assert pod["affinity"] == affinity


def test_deployment_selectors_match_their_pods_only(defaults: Rendered) -> None:
    webhook, reconciler = defaults.deployment("webhook"), defaults.deployment("reconciler")
    for own, other in ((webhook, reconciler), (reconciler, webhook)):
        assert selector_matches(own["spec"]["selector"], own["spec"]["template"]["metadata"]["labels"])
        assert not selector_matches(own["spec"]["selector"], other["spec"]["template"]["metadata"]["labels"])


def test_only_the_reconciler_gets_an_api_token(defaults: Rendered) -> None:
    webhook_pod = defaults.deployment("webhook")["spec"]["template"]["spec"]
    assert webhook_pod["automountServiceAccountToken"] is False
    reconciler_pod = defaults.deployment("reconciler")["spec"]["template"]["spec"]
    assert reconciler_pod.get("automountServiceAccountToken", True) is True


def test_reconciler_elects_a_leader_with_a_lease_in_the_release_namespace(defaults: Rendered) -> None:
    args = container_args(defaults.deployment("reconciler"), "reconciler")
    assert "--leader-elect" in args
    assert flag_value(args, "--lease-name") == "mb-modelbooster-reconciler"
    assert flag_value(args, "--lease-namespace") == NAMESPACE
    env = {e["name"]: e for e in defaults.deployment("reconciler")["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"


def test_reconciler_settings_reach_the_process(rendered_scenarios: dict[str, Rendered]) -> None:
    defaults = rendered_scenarios["defaults"]
    args = container_args(defaults.deployment("reconciler"), "reconciler")
    assert flag_value(args, "--modelbooster-workers") == "5"
    assert flag_value(args, "--namespaces") is None  # every namespace
    assert flag_value(args, "--modelbooster-runtime-image") == "ghcr.io/volcano-sh/runtime:latest"
    assert flag_value(args, "--modelbooster-downloader-image") == "ghcr.io/volcano-sh/downloader:latest"
    config_map = defaults.one("ConfigMap", "mb-modelbooster-reconciler")["metadata"]["name"]
    assert flag_value(args, "--modelbooster-config-map") == config_map
    restricted = container_args(rendered_scenarios["namespaces"].deployment("reconciler"), "reconciler")
    assert flag_value(restricted, "--namespaces") == "team-a,team-b"
    logging = container_args(rendered_scenarios["everything"].deployment("reconciler"), "reconciler")
    assert (flag_value(logging, "--log-level"), flag_value(logging, "--log-format")) == ("debug", "text")


def test_shutdown_fits_in_the_grace_period(rendered_scenarios: dict[str, Rendered]) -> None:
    for component in COMPONENTS:
        deployment = rendered_scenarios["defaults"].deployment(component)
        grace = deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        args = container_args(deployment, component)
        delay = float(flag_value(args, "--shutdown-delay") or 0)
        drain = float(flag_value(args, "--shutdown-timeout") or 0)
        assert 0 < delay + drain < grace, component
    webhook_args = container_args(rendered_scenarios["defaults"].deployment("webhook"), "webhook")
    assert float(flag_value(webhook_args, "--shutdown-delay") or 0) > 0  # endpoints drop the pod first


def test_user_pod_settings_are_applied(defaults: Rendered) -> None:
    values = {
        "reconciler": {
            "nodeSelector": {"pool": "system"},
            "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
            "priorityClassName": "system-cluster-critical",
            "podAnnotations": {"example.com/team": "ml"},
            "podLabels": {"team": "ml"},
            "extraArgs": ["--some-flag=1"],
            "extraEnv": [{"name": "INFERNO_HOST", "value": "inferno.ml.svc"}],
        }
    }
    deployment = render(values).deployment("reconciler")
    pod = deployment["spec"]["template"]
    assert pod["spec"]["nodeSelector"] == {"pool": "system"}
    assert pod["spec"]["tolerations"][0]["key"] == "dedicated"
    assert pod["spec"]["priorityClassName"] == "system-cluster-critical"
    assert pod["metadata"]["annotations"]["example.com/team"] == "ml"
    assert pod["metadata"]["labels"]["team"] == "ml"
    assert container_args(deployment, "reconciler")[-1] == "--some-flag=1"
    assert {"name": "INFERNO_HOST", "value": "inferno.ml.svc"} in pod["spec"]["containers"][0]["env"]
    # The selector is untouched by extra pod labels, so upgrades that add labels do not orphan pods.
    assert deployment["spec"]["selector"] == defaults.deployment("reconciler")["spec"]["selector"]


def test_child_crds_are_judged_only_when_the_chart_installs_them(rendered_scenarios: dict[str, Rendered]) -> None:
    judged = container_args(rendered_scenarios["defaults"].deployment("reconciler"), "reconciler")
    assert "--no-check-child-crds" not in judged
    for scenario in ("no-child-crds", "everything"):
        args = container_args(rendered_scenarios[scenario].deployment("reconciler"), "reconciler")
        assert "--no-check-child-crds" in args, scenario
