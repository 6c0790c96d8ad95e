"""Named values sets: the defaults and each switch of the chart, alone and together."""

from __future__ import annotations

from typing import Any

RUNBOOKS = "https://docs.example.com/modelbooster/chart.md"

SCENARIOS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "cert-manager": {"certManager": {"enabled": True}},
    "cert-manager-existing-issuer": {
        "certManager": {
            "enabled": True,
            "issuerRef": {"name": "corp-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"},
        }
    },
    "no-child-crds": {"crds": {"installChildCRDs": False}},
    "service-monitor": {"metrics": {"serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}}}},
    "monitoring": {
        "metrics": {
            "serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}},
            "prometheusRule": {"enabled": True, "labels": {"release": "prometheus"}},
            "dashboard": {"enabled": True},
        }
    },
    "webhook-disabled": {"webhook": {"enabled": False}},
    "webhook-tuned": {"webhook": {"failurePolicy": "Ignore", "timeoutSeconds": 12, "tlsMinVersion": "1.3"}},
    "namespaces": {"reconciler": {"watchNamespaces": ["team-a", "team-b"]}},
    "high-availability": {"webhook": {"replicas": 3}, "reconciler": {"replicas": 2}},
    "network-policy": {
        "networkPolicy": {"enabled": True, "webhookFrom": [{"ipBlock": {"cidr": "172.16.0.0/28"}}]},
    },
    "no-inferno": {"inferno": {"enabled": False}},
    "inferno-closed-loop": {
        "inferno": {
            "namespaces": ["serving", "research"],
            "extraTargetKinds": [{"apiGroup": "argoproj.io", "resources": ["rollouts"]}],
            "ceilings": {
                "maxReplicas": 40,
                "minReplicas": 0,
                "maxScaleStep": 2,
                "maxScaleStepPercent": 50,
                "minStabilization": "3m",
            },
            "prometheus": {
                "url": "https://prometheus.monitoring:9091",
                "timeout": 2.5,
                "window": "5m",
                "arrivalQuery": 'sum(rate(vllm:request_success_total{namespace="$namespace"}[$window])) * 60',
                "signalQueries": {"kvCache": 'avg(vllm:kv_cache_usage_perc{namespace="$namespace",role="$role"})'},
                "bearerTokenSecret": {"name": "inferno-prometheus", "key": "token"},
                "caSecret": {"name": "prometheus-ca", "key": "ca.crt"},
            },
            "podMonitor": {"enabled": True, "enginePort": 8080, "labels": {"release": "prometheus"}},
        }
    },
    "extra-volumes-and-annotations": {
        "webhook": {
            "extraVolumes": [{"name": "corp-ca", "configMap": {"name": "corp-ca"}}],
            "extraVolumeMounts": [{"name": "corp-ca", "mountPath": "/etc/corp-ca", "readOnly": True}],
            "service": {"annotations": {"example.com/mesh": "off"}},
        },
        "reconciler": {
            "extraVolumes": [{"name": "kubeconfig", "secret": {"secretName": "remote-kubeconfig"}}],
            "extraVolumeMounts": [{"name": "kubeconfig", "mountPath": "/etc/kube", "readOnly": True}],
        },
        "metrics": {"service": {"annotations": {"prometheus.io/scrape": "true"}}},
    },
    "existing-service-accounts": {
        "serviceAccount": {"create": False, "webhookName": "wh-sa", "reconcilerName": "rc-sa"},
    },
    "everything": {
        "certManager": {"enabled": True},
        "crds": {"installChildCRDs": False},
        "metrics": {
            "serviceMonitor": {"enabled": True},
            "prometheusRule": {"enabled": True, "alertLabels": {"team": "ml"}, "runbookBaseURL": RUNBOOKS},
            "dashboard": {"enabled": True, "annotations": {"grafana_folder": "ModelBooster"}},
        },
        "reconciler": {"watchNamespaces": ["team-a"], "replicas": 2},
        "webhook": {"failurePolicy": "Ignore", "timeoutSeconds": 3},
        "image": {"digest": "sha256:" + "ab" * 32},
        "logging": {"level": "debug", "format": "text"},
        "networkPolicy": {"enabled": True},
        "inferno": {"enabled": False},
    },
}
