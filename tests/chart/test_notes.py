"""NOTES.txt tells the user how to check the install, with the names this release really uses."""

from __future__ import annotations

from tests.chart.render import NAMESPACE, REPO_ROOT, Rendered, render

P = "mb-modelbooster"


def test_notes_name_the_objects_to_check(defaults: Rendered) -> None:
    notes = defaults.notes
    names = {obj["metadata"]["name"] for obj in defaults.objects}
    assert f"kubectl -n {NAMESPACE} get deploy,pods -l app.kubernetes.io/instance=mb" in notes
    assert f"secret {P}-webhook-tls" in notes
    assert f"mutatingwebhookconfiguration {P} " in notes
    assert f"validatingwebhookconfiguration {P} " in notes
    assert P in names
    assert f"svc/{P}-reconciler-metrics" in notes
    assert f"{P}-reconciler-metrics" in names
    assert "kubectl create --dry-run=server" in notes
    assert "reconciler (its leader) creates and rotates the certificate" in notes


def test_notes_in_cert_manager_mode_point_at_the_certificate(rendered_scenarios: dict[str, Rendered]) -> None:
    notes = rendered_scenarios["cert-manager"].notes
    assert f"get certificate {P}-webhook" in notes
    assert "reconciler (its leader) creates" not in notes


def test_notes_say_which_namespaces_the_webhooks_match(rendered_scenarios: dict[str, Rendered]) -> None:
    assert f"every namespace except {NAMESPACE} and kube-system." in rendered_scenarios["defaults"].notes
    assert "limited to team-a, team-b" in rendered_scenarios["namespaces"].notes


CHILD_CRDS = "kubectl apply --server-side --force-conflicts -f charts/modelbooster/charts/child-crds/crds/"
INFERNO_CRDS = "kubectl apply --server-side --force-conflicts -f charts/modelbooster/charts/inferno-crds/crds/"
OUR_CRD = "kubectl apply --server-side --force-conflicts -f charts/modelbooster/crds/"


def test_notes_name_the_child_crd_step_only_when_the_chart_installs_them() -> None:
    """With crds.installChildCRDs=false the child CRDs are Kthena's: applying ours would replace, say, Kthena
    v0.4's Binding CRD (`homogeneousTarget`) with v0.1.0's shape. Every step named is a directory that exists."""
    installed = render().notes
    assert OUR_CRD in installed
    assert CHILD_CRDS in installed
    assert INFERNO_CRDS in installed
    kthena = render({"crds": {"installChildCRDs": False}}).notes
    assert OUR_CRD in kthena
    assert "child-crds" not in kthena
    assert "charts/*/crds" not in kthena
    assert "(not the child CRDs: crds.installChildCRDs=false, they are Kthena's" in kthena
    assert INFERNO_CRDS in kthena
    assert INFERNO_CRDS not in render({"inferno": {"enabled": False}}).notes
    for notes in (installed, kthena):
        for line in notes.splitlines():
            if "kubectl apply --server-side" in line:
                assert (REPO_ROOT / line.split(" -f ")[1].strip()).is_dir(), line
