"""Generate the chart's Grafana dashboard from code, with grafana-foundation-sdk (never edit the JSON by hand).

    python scripts/dashboard.py            # print the dashboard JSON
    python scripts/dashboard.py --write    # write it to charts/modelbooster/dashboards/modelbooster.json
    python scripts/dashboard.py --check    # exit 1 when the chart's copy differs from what this generates

Every query names only metrics that docs/chart.md lists (tests/chart/test_dashboard.py checks it). Series are
picked by `namespace` and `job`, the labels a Prometheus scrape gives them; two variables find the jobs of the
webhook and of the reconciler in the chosen namespace, whatever the scrape configuration calls them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from grafana_foundation_sdk.builders.dashboard import Dashboard, DatasourceVariable, QueryVariable, Row
from grafana_foundation_sdk.builders.prometheus import Dataquery
from grafana_foundation_sdk.builders.stat import Panel as Stat
from grafana_foundation_sdk.builders.timeseries import Panel as Timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.common import VisibilityMode
from grafana_foundation_sdk.models.dashboard import Dashboard as DashboardModel
from grafana_foundation_sdk.models.dashboard import DataSourceRef, VariableRefresh, VariableSort

REPO_ROOT = Path(__file__).resolve().parents[1]
OUTPUT = REPO_ROOT / "charts" / "modelbooster" / "dashboards" / "modelbooster.json"
UID = "modelbooster"

DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
WEBHOOK = 'namespace="$namespace", job="$webhook_job"'
RECONCILER = 'namespace="$namespace", job="$reconciler_job"'
# The queue series of standby replicas fill up too (a new leader starts with a full queue), so queue panels
# keep the series of the pod that leads.
LEADER = f"and on (instance) (leader_election_master_status{{{RECONCILER}}} == 1)"
# Rare events (a ModelBooster created, an optimisation run) leave most rate windows empty: their quantiles
# are taken over a fixed hour instead.
RARE_WINDOW = "1h"


# The engines' inter-token latency histograms (shared/engines/<engine>/series.py: vLLM 0.33.0's name, then the one
# before vLLM 0.11; SGLang 0.5.23's). A pod counts under the first name it exports.
VLLM_ITL = ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds")
SGLANG_ITL = ("sglang:inter_token_latency_seconds",)


def _mean_by_model(*histograms: str) -> str:
    """The mean of a histogram per namespace and model, over every name it had."""

    def rates(suffix: str) -> str:
        return " or ".join(f"rate({name}_{suffix}[$__rate_interval])" for name in histograms)

    return f"sum by (namespace, model_name) ({rates('sum')}) / sum by (namespace, model_name) ({rates('count')})"


@dataclass(frozen=True)
class Query:
    expr: str
    legend: str


def _targets(queries: Sequence[Query]) -> list[Dataquery]:
    return [
        Dataquery().expr(query.expr).legend_format(query.legend).ref_id(chr(ord("A") + index)).datasource(DATASOURCE)
        for index, query in enumerate(queries)
    ]


def _timeseries(
    title: str, description: str, unit: str, *queries: Query, width: int = 8, height: int = 8
) -> Timeseries:
    panel = Timeseries().title(title).description(description).unit(unit).datasource(DATASOURCE)
    panel = panel.span(width).height(height).min(0).fill_opacity(10).show_points(VisibilityMode.NEVER)
    for target in _targets(queries):
        panel = panel.with_target(target)
    return panel


def _stat(title: str, description: str, unit: str, *queries: Query, width: int = 4) -> Stat:
    panel = Stat().title(title).description(description).unit(unit).datasource(DATASOURCE).span(width).height(8)
    for target in _targets(queries):
        panel = panel.with_target(target)
    return panel


def _quantiles(metric: str, selector: str, by: str, window: str, *, legend: str) -> list[Query]:
    """p50 and p99 of a histogram, one series per `by` label set."""
    grouping = f"{by}, le" if by else "le"
    return [
        Query(
            f"histogram_quantile({q}, sum by ({grouping}) (rate({metric}_bucket{{{selector}}}[{window}])))",
            f"p{round(q * 100)} {legend}".strip(),
        )
        for q in (0.5, 0.99)
    ]


def _variables(dashboard: Dashboard) -> Dashboard:
    def jobs(name: str, label: str, component: str) -> QueryVariable:
        # modelbooster_build_info has a series from each process's start, so on a quiet cluster (no admission
        # request yet, no ModelBooster) the variable still finds the job and the panels show their data.
        return (
            QueryVariable(name)
            .label(label)
            .datasource(DATASOURCE)
            .query(f'label_values(modelbooster_build_info{{namespace="$namespace", component="{component}"}}, job)')
            .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
            .sort(VariableSort.ALPHABETICAL_ASC)
        )

    return (
        dashboard.with_variable(DatasourceVariable("datasource").label("Data source").type("prometheus"))
        .with_variable(
            QueryVariable("namespace")
            .label("Namespace")
            .datasource(DATASOURCE)
            .query("label_values(modelbooster_build_info, namespace)")
            .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
            .sort(VariableSort.ALPHABETICAL_ASC)
        )
        .with_variable(jobs("webhook_job", "Webhook job", "webhook"))
        .with_variable(jobs("reconciler_job", "Reconciler job", "reconciler"))
    )


def _scrapes(dashboard: Dashboard) -> Dashboard:
    both = 'namespace="$namespace", job=~"$webhook_job|$reconciler_job"'
    return dashboard.with_row(Row("Scrape health")).with_panel(
        _timeseries(
            "Targets up",
            "Pods of each process that Prometheus scrapes successfully (`up`), out of those it tries. A pod that "
            "is not scraped shows no data in the panels below, which is not the same as zero.",
            "short",
            Query(f"sum by (job) (up{{{both}}})", "{{job}} up"),
            Query(f"count by (job) (up{{{both}}})", "{{job}} scraped"),
            width=24,
            height=5,
        )
    )


def _admission(dashboard: Dashboard) -> Dashboard:
    requests = f"controller_runtime_webhook_requests_total{{{WEBHOOK}}}"
    return (
        dashboard.with_row(Row("Admission (webhook)"))
        .with_panel(
            _timeseries(
                "Requests by code",
                "Admission requests answered per second, by path and HTTP status. A 5xx, like an unanswered "
                "request, is a ModelBooster write the API server refuses (failurePolicy Fail).",
                "reqps",
                Query(f"sum by (webhook, code) (rate({requests}[$__rate_interval]))", "{{webhook}} {{code}}"),
            )
        )
        .with_panel(
            _timeseries(
                "Latency p50 / p99",
                "Time to answer one admission request. The API server gives up after webhook.timeoutSeconds.",
                "s",
                *_quantiles(
                    "controller_runtime_webhook_latency_seconds",
                    WEBHOOK,
                    "webhook",
                    "$__rate_interval",
                    legend="{{webhook}}",
                ),
            )
        )
        .with_panel(
            _timeseries(
                "Denials by reason",
                "Refused admission requests per second by the Status reason: Invalid (the ModelBooster breaks "
                "a rule), BadRequest (a request the webhook cannot judge), InternalError (a defect).",
                "reqps",
                Query(
                    f"sum by (webhook, reason) (rate(modelbooster_admission_denials_total{{{WEBHOOK}}}"
                    "[$__rate_interval]))",
                    "{{webhook}} {{reason}}",
                ),
            )
        )
        .with_panel(
            _timeseries(
                "In flight",
                "Admission requests being answered now, per pod.",
                "short",
                Query(
                    f"sum by (pod) (controller_runtime_webhook_requests_in_flight{{{WEBHOOK}}})",
                    "{{pod}}",
                ),
                width=12,
            )
        )
        .with_panel(
            _stat(
                "Ready webhook pods",
                "Pods whose /readyz answers ok. None means every ModelBooster write fails.",
                "short",
                Query(f"sum(modelbooster_webhook_ready{{{WEBHOOK}}})", "ready"),
            )
        )
        .with_panel(
            _stat(
                "Certificate expires in",
                "Time left on the serving certificate in use (soonest pod), and, in the default certificate "
                "mode, on the certificate in each Secret the reconciler keeps.",
                "s",
                Query(
                    f"min(modelbooster_webhook_certificate_expiry_timestamp_seconds{{{WEBHOOK}}} > 0) - time()",
                    "in use",
                ),
                Query(
                    f"min by (secret) (modelbooster_certificate_expiry_timestamp_seconds{{{RECONCILER}}}) - time()",
                    "{{secret}}",
                ),
                width=8,
            )
        )
    )


def _reconciler(dashboard: Dashboard) -> Dashboard:
    return (
        dashboard.with_row(Row("Reconciler"))
        .with_panel(
            _timeseries(
                "Reconciles by result",
                "Reconciles per second of each controller (modelbooster, inferno), by outcome.",
                "ops",
                Query(
                    f"sum by (controller, result) (rate(controller_runtime_reconcile_total{{{RECONCILER}}}"
                    "[$__rate_interval]))",
                    "{{controller}} {{result}}",
                ),
            )
        )
        .with_panel(
            _timeseries(
                "Reconcile errors",
                "Reconciles that returned an error (retried with backoff) and terminal errors (reported in "
                "status, not retried), per second.",
                "ops",
                Query(
                    f"sum by (controller) (rate(controller_runtime_reconcile_errors_total{{{RECONCILER}}}"
                    "[$__rate_interval]))",
                    "{{controller}} errors",
                ),
                Query(
                    "sum by (controller) (rate(controller_runtime_terminal_reconcile_errors_total"
                    f"{{{RECONCILER}}}[$__rate_interval]))",
                    "{{controller}} terminal",
                ),
            )
        )
        .with_panel(
            _timeseries(
                "Reconcile time p50 / p99",
                "Time per reconcile, per controller.",
                "s",
                *_quantiles(
                    "controller_runtime_reconcile_time_seconds",
                    RECONCILER,
                    "controller",
                    "$__rate_interval",
                    legend="{{controller}}",
                ),
            )
        )
        .with_panel(
            _timeseries(
                "Work-queue depth (leader)",
                "Keys waiting for a worker in the leading pod.",
                "short",
                Query(f"sum by (name) (workqueue_depth{{{RECONCILER}}} {LEADER})", "{{name}}"),
            )
        )
        .with_panel(
            _timeseries(
                "Work-queue wait and work p99",
                "How long a key waits before a worker takes it, and how long the worker spends on it.",
                "s",
                Query(
                    "histogram_quantile(0.99, sum by (name, le) (rate(workqueue_queue_duration_seconds_bucket"
                    f"{{{RECONCILER}}}[$__rate_interval])))",
                    "wait {{name}}",
                ),
                Query(
                    "histogram_quantile(0.99, sum by (name, le) (rate(workqueue_work_duration_seconds_bucket"
                    f"{{{RECONCILER}}}[$__rate_interval])))",
                    "work {{name}}",
                ),
            )
        )
        .with_panel(
            _timeseries(
                "API requests by verb and code",
                "Requests to the Kubernetes API per second; watch the 4xx and 5xx codes.",
                "reqps",
                Query(
                    f"sum by (method, code) (rate(rest_client_requests_total{{{RECONCILER}}}[$__rate_interval]))",
                    "{{method}} {{code}}",
                ),
            )
        )
        .with_panel(
            _timeseries(
                "Leader",
                "1 on the pod holding the leader Lease. Exactly one pod should show 1.",
                "short",
                Query(f"max by (pod) (leader_election_master_status{{{RECONCILER}}})", "{{pod}}"),
                width=24,
                height=5,
            )
        )
    )


def _boosters(dashboard: Dashboard) -> Dashboard:
    return (
        dashboard.with_row(Row("ModelBoosters"))
        .with_panel(
            _timeseries(
                "ModelBoosters by condition",
                "ModelBoosters whose Initialized, Active or Failed condition is True (every replica reports "
                "the same count from its cache).",
                "short",
                Query(f"max by (condition) (modelbooster_boosters{{{RECONCILER}}})", "{{condition}}"),
            )
        )
        .with_panel(
            _timeseries(
                "Time to Initialized p50 / p99",
                "From creation to the first Initialized=True, over the ModelBoosters initialized in the last "
                f"{RARE_WINDOW}. Both timestamps have whole seconds: below 1 s means within the second of creation.",
                "s",
                *_quantiles("modelbooster_time_to_initialized_seconds", RECONCILER, "", RARE_WINDOW, legend=""),
            )
        )
        .with_panel(
            _timeseries(
                "Children written",
                "Creates, updates and deletes of children per second. A steady rate with no spec changes means "
                "something else keeps changing them.",
                "ops",
                Query(
                    f"sum by (kind, action) (rate(modelbooster_children_applied_total{{{RECONCILER}}}"
                    "[$__rate_interval]))",
                    "{{kind}} {{action}}",
                ),
            )
        )
    )


def _inferno(dashboard: Dashboard) -> Dashboard:
    return (
        dashboard.with_row(Row("Inferno"))
        .with_panel(
            _timeseries(
                "Optimizations by result",
                "Optimisation runs per minute: success, invalid (the namespace's objects do not form a valid "
                "system) or error.",
                "opm",
                Query(
                    f"sum by (result) (rate(inferno_optimizations_total{{{RECONCILER}}}[$__rate_interval])) * 60",
                    "{{result}}",
                ),
            )
        )
        .with_panel(
            _timeseries(
                "Optimization duration p50 / p99",
                f"Time of one successful run, over the runs of the last {RARE_WINDOW}.",
                "s",
                *_quantiles("inferno_optimization_duration_seconds", RECONCILER, "", RARE_WINDOW, legend=""),
            )
        )
        .with_panel(
            _timeseries(
                "Cost of the allocation",
                "Total cost of the allocation each Optimizer's last successful run chose, in cents per hour.",
                "none",
                Query(
                    f"max by (optimizer_namespace, optimizer) (inferno_allocation_cost{{{RECONCILER}}})",
                    "{{optimizer_namespace}}/{{optimizer}}",
                ),
            )
        )
    )


# Per-Server series carry the Server's namespace as `exported_namespace` (the scrape sets `namespace`).
SERVER = "exported_namespace, server"
SERVER_LEGEND = "{{exported_namespace}}/{{server}}"


def _inferno_loop(dashboard: Dashboard) -> Dashboard:
    return (
        dashboard.with_row(Row("Inferno loop"))
        .with_panel(
            _timeseries(
                "Desired vs current replicas",
                "Per Server: the replicas the last run decided (what Scale actuation, KEDA or an HPA acts on) "
                "and those its target reports.",
                "none",
                Query(f"max by ({SERVER}) (inferno_desired_replicas{{{RECONCILER}}})", f"desired {SERVER_LEGEND}"),
                Query(f"max by ({SERVER}) (inferno_current_replicas{{{RECONCILER}}})", f"current {SERVER_LEGEND}"),
            )
        )
        .with_panel(
            _timeseries(
                "Load: arrival rate",
                "Requests per minute each Server was sized for (measured from its engines' own metrics when "
                "targeted).",
                "none",
                Query(f"max by ({SERVER}) (inferno_load_arrival_rate{{{RECONCILER}}})", SERVER_LEGEND),
            )
        )
        .with_panel(
            _timeseries(
                "Load: tokens per request",
                "Average generated tokens per request each Server was sized for.",
                "none",
                Query(f"max by ({SERVER}) (inferno_load_avg_length{{{RECONCILER}}})", SERVER_LEGEND),
            )
        )
        .with_panel(
            _timeseries(
                "ITL: predicted vs observed",
                "Mean inter-token latency Inferno predicts for each Server's decision, beside the one the engines "
                "observe per model, when Prometheus scrapes them: vLLM's (vllm:inter_token_latency_seconds, or "
                "before vLLM 0.11 vllm:time_per_output_token_seconds) and SGLang's "
                "(sglang:inter_token_latency_seconds).",
                "s",
                Query(
                    f"max by ({SERVER}) (inferno_predicted_itl_seconds{{{RECONCILER}}})", f"predicted {SERVER_LEGEND}"
                ),
                Query(_mean_by_model(*VLLM_ITL), "observed {{namespace}}/{{model_name}} (vLLM)"),
                Query(_mean_by_model(*SGLANG_ITL), "observed {{namespace}}/{{model_name}} (SGLang)"),
            )
        )
        .with_panel(
            _timeseries(
                "Not measured, not scaled",
                "Servers whose load the last run could not measure (last load kept), and Servers whose target "
                "Scale actuation leaves alone, by reason (the ScalingActive condition's).",
                "none",
                Query(f"max by ({SERVER}) (inferno_load_stale{{{RECONCILER}}}) > 0", f"load stale {SERVER_LEGEND}"),
                Query(
                    f"max by ({SERVER}, reason) (inferno_scale_blocked{{{RECONCILER}}})",
                    f"{{{{reason}}}} {SERVER_LEGEND}",
                ),
            )
        )
        .with_panel(
            _timeseries(
                "Scale changes",
                "Changes of targets' replicas made by Scale actuation, per hour, by direction.",
                "none",
                Query(
                    f"sum by (direction) (increase(inferno_scale_changes_total{{{RECONCILER}}}[1h]))",
                    "{{direction}}",
                ),
            )
        )
    )


def build() -> DashboardModel:
    """The dashboard, its panels numbered in order (Grafana links to a panel by its id)."""
    dashboard = (
        Dashboard("ModelBooster")
        .uid(UID)
        .description("Admission webhook, reconciler, ModelBoosters and Inferno of modelbooster")
        .tags(["modelbooster", "kubernetes"])
        .refresh("30s")
        .time("now-6h", "now")
        .timezone("browser")
    )
    for section in (_variables, _scrapes, _admission, _reconciler, _boosters, _inferno, _inferno_loop):
        dashboard = section(dashboard)
    model = dashboard.build()
    for number, panel in enumerate(model.panels or (), start=1):
        panel.id_val = number
    return model


def render() -> str:
    return JSONEncoder(sort_keys=True, indent=2).encode(build()) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help=f"write {OUTPUT.relative_to(REPO_ROOT)}")
    mode.add_argument("--check", action="store_true", help="exit 1 when the chart's copy is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.write:
        OUTPUT.parent.mkdir(parents=True, exist_ok=True)
        OUTPUT.write_text(text)
        return 0
    if args.check:
        if not OUTPUT.exists() or OUTPUT.read_text() != text:
            print(f"{OUTPUT.relative_to(REPO_ROOT)} is stale: run python scripts/dashboard.py --write", file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
