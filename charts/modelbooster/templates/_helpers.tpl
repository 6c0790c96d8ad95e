{{/*
Names. The prefix is capped at 40 characters so that the longest suffix ("-reconciler-metrics", 19) still
fits the 63-character limit of Service names and label values.
*/}}
{{- define "modelbooster.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{- define "modelbooster.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "modelbooster.webhook.fullname" -}}
{{- printf "%s-webhook" (include "modelbooster.fullname" .) -}}
{{- end -}}

{{- define "modelbooster.reconciler.fullname" -}}
{{- printf "%s-reconciler" (include "modelbooster.fullname" .) -}}
{{- end -}}

{{/* The Secret the webhook pods mount: kubernetes.io/tls with tls.crt, tls.key, ca.crt. */}}
{{- define "modelbooster.webhook.tlsSecretName" -}}
{{- printf "%s-webhook-tls" (include "modelbooster.fullname" .) -}}
{{- end -}}

{{/* The CA Secret only the reconciler reads (self-signed mode): ca.crt, ca.key. */}}
{{- define "modelbooster.webhook.caSecretName" -}}
{{- printf "%s-webhook-ca" (include "modelbooster.fullname" .) -}}
{{- end -}}

{{- define "modelbooster.certificateName" -}}
{{- printf "%s-webhook" (include "modelbooster.fullname" .) -}}
{{- end -}}

{{- define "modelbooster.issuerName" -}}
{{- printf "%s-selfsigned" (include "modelbooster.fullname" .) -}}
{{- end -}}

{{- define "modelbooster.caCertificateName" -}}
{{- printf "%s-ca" (include "modelbooster.fullname" .) -}}
{{- end -}}

{{- define "modelbooster.caIssuerName" -}}
{{- printf "%s-ca" (include "modelbooster.fullname" .) -}}
{{- end -}}

{{/* Both webhook configurations are cluster-scoped and share this name. */}}
{{- define "modelbooster.webhookConfigurationName" -}}
{{- include "modelbooster.fullname" . -}}
{{- end -}}

{{- define "modelbooster.leaseName" -}}
{{- default (include "modelbooster.reconciler.fullname" .) .Values.reconciler.leaderElection.leaseName -}}
{{- end -}}

{{- define "modelbooster.reconciler.configMapName" -}}
{{- include "modelbooster.reconciler.fullname" . -}}
{{- end -}}

{{- define "modelbooster.webhook.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "modelbooster.webhook.fullname" .) .Values.serviceAccount.webhookName -}}
{{- else -}}
{{- required "serviceAccount.webhookName is required when serviceAccount.create is false" .Values.serviceAccount.webhookName -}}
{{- end -}}
{{- end -}}

{{- define "modelbooster.reconciler.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "modelbooster.reconciler.fullname" .) .Values.serviceAccount.reconcilerName -}}
{{- else -}}
{{- required "serviceAccount.reconcilerName is required when serviceAccount.create is false" .Values.serviceAccount.reconcilerName -}}
{{- end -}}
{{- end -}}

{{/* Labels. */}}
{{- define "modelbooster.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "modelbooster.selectorLabels" -}}
app.kubernetes.io/name: {{ include "modelbooster.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "modelbooster.labels" -}}
helm.sh/chart: {{ include "modelbooster.chart" . }}
{{ include "modelbooster.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: modelbooster
{{- end -}}

{{/* Selector labels of one process; call with (dict "ctx" $ "component" "webhook"). */}}
{{- define "modelbooster.componentSelectorLabels" -}}
{{ include "modelbooster.selectorLabels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "modelbooster.componentLabels" -}}
{{ include "modelbooster.labels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/*
The image is required (nothing is published): a release without one would register webhooks with
`failurePolicy: Fail` in front of pods that never start, and every ModelBooster write would be refused.
*/}}
{{- define "modelbooster.image" -}}
{{- if not .Values.image.repository -}}
{{- fail "image.repository is not set: no modelbooster image is published. Build it (docker build -t <registry>/modelbooster:<version> .), push it to a registry your cluster pulls from, and set image.repository=<registry>/modelbooster (docs/chart.md, Installing). Without a runnable image the webhooks, registered with failurePolicy Fail, would refuse every ModelBooster create and update." -}}
{{- end -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/*
Namespaces whose ModelBoosters the webhooks see. The release namespace is excluded because a webhook must
never gate objects next to its own pods, and kube-system for the same reason as every admission webhook.
*/}}
{{- define "modelbooster.webhook.namespaceSelector" -}}
matchExpressions:
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values:
      - {{ .Release.Namespace }}
      - kube-system
{{- with .Values.reconciler.watchNamespaces }}
  - key: kubernetes.io/metadata.name
    operator: In
    values:
      {{- toYaml . | nindent 6 }}
{{- end }}
{{- with .Values.webhook.namespaceSelectorExpressions }}
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Consistency checks that the schema cannot express; each message names the values to change. */}}
{{- define "modelbooster.validate" -}}
{{- if and (gt (int .Values.reconciler.replicas) 1) (not .Values.reconciler.leaderElection.enabled) -}}
{{- fail "reconciler.replicas > 1 needs reconciler.leaderElection.enabled=true: without a leader every replica would write" -}}
{{- end -}}
{{- if and .Values.webhook.enabled (has .Release.Namespace .Values.reconciler.watchNamespaces) -}}
{{- fail (printf "reconciler.watchNamespaces contains the release namespace %q, which the webhooks exclude; install the chart in another namespace or disable the webhook" .Release.Namespace) -}}
{{- end -}}
{{- end -}}

{{/* Non-empty when the reconciler owns the webhook certificate (webhook on, cert-manager off). */}}
{{- define "modelbooster.selfSignedCerts" -}}
{{- if and .Values.webhook.enabled (not .Values.certManager.enabled) -}}true{{- end -}}
{{- end -}}

{{/*
The reconciler's rules on ModelBoosters and their children: the verbs its code uses. Informers list and watch;
a ModelBooster is read (get) afresh before it adopts an orphaned child; children are created, read back after an
AlreadyExists, changed by server-side apply or a merge patch (patch) and deleted when stale; status is written
with a patch; Events are created, then patched when they repeat.
*/}}
{{- define "modelbooster.reconciler.workloadRules" -}}
- apiGroups: ["workload.serving.volcano.sh"]
  resources: ["modelboosters"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["workload.serving.volcano.sh"]
  resources: ["modelboosters/status"]
  verbs: ["patch"]
- apiGroups: ["workload.serving.volcano.sh"]
  resources: ["modelservings", "autoscalingpolicies", "autoscalingpolicybindings"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["networking.serving.volcano.sh"]
  resources: ["modelservers", "modelroutes"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list", "watch"]
{{- end -}}

{{/*
The Inferno controller's rules, where it watches (reconciler-rbac.yaml: a ClusterRole, or a Role per Inferno
namespace). Scale actuation reads a target (its annotations say who may scale it, its owner references whether
something else controls it) and reads and sets its /scale; it lists the other scalers that may name it, HPAs and
KEDA ScaledObjects (docs/design/inferno.md §14).
*/}}
{{- define "modelbooster.reconciler.infernoRules" -}}
- apiGroups: ["inferno.platform.ai"]
  resources: ["accelerators", "models", "serviceclasses", "capacities"]
  verbs: ["list", "watch"]
# The Inferno controller writes desiredAlloc on Servers and resets Optimizer.spec.optimize (both patches).
- apiGroups: ["inferno.platform.ai"]
  resources: ["servers", "optimizers"]
  verbs: ["list", "watch", "patch"]
# Optimizer status; in stateful remote mode also `status.active` on every object mirrored to the optimizer.
- apiGroups: ["inferno.platform.ai"]
  resources: ["optimizers/status", "accelerators/status", "models/status", "serviceclasses/status", "servers/status", "capacities/status"]
  verbs: ["patch"]
# Scale actuation's targets: a ModelBooster's ModelServing (read with the ModelBooster that controls it, whose
# annotations consent and whose backend bounds it), a Deployment, StatefulSet or ReplicaSet, and the kinds of
# inferno.extraTargetKinds; AutoscalingPolicyBindings name ModelServings that Kthena's autoscaler drives. A
# disaggregated ModelServing's prefill and decode roles are scaled by a JSON patch of their replicas (the roles
# have no /scale of their own), so ModelServings are patched too.
- apiGroups: ["workload.serving.volcano.sh"]
  resources: ["modelboosters"]
  verbs: ["get"]
- apiGroups: ["workload.serving.volcano.sh"]
  resources: ["modelservings"]
  verbs: ["get", "patch"]
- apiGroups: ["workload.serving.volcano.sh"]
  resources: ["modelservings/scale"]
  verbs: ["get", "patch"]
# The ModelServer named like a target says which engine serves it, and so which engine's series to read.
- apiGroups: ["networking.serving.volcano.sh"]
  resources: ["modelservers"]
  verbs: ["get"]
- apiGroups: ["workload.serving.volcano.sh"]
  resources: ["autoscalingpolicybindings"]
  verbs: ["list"]
- apiGroups: ["apps"]
  resources: ["deployments", "statefulsets", "replicasets"]
  verbs: ["get"]
- apiGroups: ["apps"]
  resources: ["deployments/scale", "statefulsets/scale", "replicasets/scale"]
  verbs: ["get", "patch"]
{{- range .Values.inferno.extraTargetKinds }}
- apiGroups: [{{ .apiGroup | quote }}]
  resources: {{ toJson .resources }}
  verbs: ["get"]
- apiGroups: [{{ .apiGroup | quote }}]
  resources: [{{ range $index, $resource := .resources }}{{ if $index }}, {{ end }}{{ printf "%s/scale" $resource | quote }}{{ end }}]
  verbs: ["get", "patch"]
{{- end }}
# Events on Servers and Optimizers (Scaled, NotScaled, Optimized, ...).
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
# Other scalers of a target, refused rather than fought.
- apiGroups: ["autoscaling"]
  resources: ["horizontalpodautoscalers"]
  verbs: ["list"]
- apiGroups: ["keda.sh"]
  resources: ["scaledobjects"]
  verbs: ["list"]
{{- end -}}

{{/* The labels block of one alert: `severity`, then metrics.prometheusRule.alertLabels (which cannot replace it). */}}
{{- define "modelbooster.alertLabels" -}}
labels:
  severity: {{ .severity }}
  {{- with omit .rule.alertLabels "severity" }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end -}}

{{/* `runbook_url` of one alert, when metrics.prometheusRule.runbookBaseURL is set: its anchor in docs/chart.md. */}}
{{- define "modelbooster.runbookURL" -}}
{{- with .rule.runbookBaseURL -}}
runbook_url: {{ printf "%s#%s" (trimSuffix "/" .) (lower $.alert) | quote }}
{{- end -}}
{{- end -}}

{{/* The namespaces of Inferno objects: inferno.namespaces, else reconciler.watchNamespaces; empty means all. */}}
{{- define "modelbooster.inferno.namespaces" -}}
{{- join "," (.Values.inferno.namespaces | default .Values.reconciler.watchNamespaces) -}}
{{- end -}}

{{/*
The entries of the two webhook configurations (templates/webhook-configurations.yaml): rendered as `webhooks`
with cert-manager, or into the annotation the reconciler arms them from (docs/design/webhook.md §7).
*/}}
{{- define "modelbooster.webhook.service" -}}
{{- toYaml (dict "name" (include "modelbooster.webhook.fullname" .) "namespace" .Release.Namespace "port" (int .Values.webhook.service.port)) -}}
{{- end -}}

{{- define "modelbooster.webhook.mutatingEntries" -}}
- name: mutate.modelboosters.workload.serving.volcano.sh
  admissionReviewVersions: ["v1"]
  sideEffects: None
  failurePolicy: {{ .Values.webhook.failurePolicy }}
  timeoutSeconds: {{ .Values.webhook.timeoutSeconds }}
  matchPolicy: Equivalent
  # Our defaults do not depend on other mutating webhooks' changes.
  reinvocationPolicy: Never
  clientConfig:
    service:
      {{- include "modelbooster.webhook.service" . | nindent 6 }}
      path: /mutate/modelbooster
  rules:
    - apiGroups: ["workload.serving.volcano.sh"]
      apiVersions: ["v1alpha1"]
      resources: ["modelboosters"]
      operations: ["CREATE", "UPDATE"]
      scope: Namespaced
  namespaceSelector:
    {{- include "modelbooster.webhook.namespaceSelector" . | nindent 4 }}
  {{- with .Values.webhook.objectSelector }}
  objectSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}

{{- define "modelbooster.webhook.validatingEntries" -}}
- name: validate.modelboosters.workload.serving.volcano.sh
  admissionReviewVersions: ["v1"]
  sideEffects: None
  failurePolicy: {{ .Values.webhook.failurePolicy }}
  timeoutSeconds: {{ .Values.webhook.timeoutSeconds }}
  matchPolicy: Equivalent
  clientConfig:
    service:
      {{- include "modelbooster.webhook.service" . | nindent 6 }}
      path: /validate/modelbooster
  rules:
    # UPDATE too: a worker's replicas may not change (ModelServing's gangPolicy is immutable).
    - apiGroups: ["workload.serving.volcano.sh"]
      apiVersions: ["v1alpha1"]
      resources: ["modelboosters"]
      operations: ["CREATE", "UPDATE"]
      scope: Namespaced
  namespaceSelector:
    {{- include "modelbooster.webhook.namespaceSelector" . | nindent 4 }}
  {{- with .Values.webhook.objectSelector }}
  objectSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}
