{{/*
Names. Cluster-scoped objects (ClusterRoles, bindings) carry the full name so two releases
(two scheduler names) can share a cluster.
*/}}
{{- define "kqe.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "kqe.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "kqe.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "kqe.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create=false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "kqe.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kqe.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "kqe.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "kqe.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: scheduler
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
Whether any port of the extender is reachable from outside the pod: the metrics listener
(metrics.enabled) or the verbs' listener on 0.0.0.0 (extender.listenAll). By default both stay
on 127.0.0.1 and only kube-scheduler reaches the extender. Returns "true" or "".
*/}}
{{- define "kqe.exposed" -}}
{{- if or .Values.metrics.enabled .Values.extender.listenAll .Values.statusPage.enabled }}true{{ end }}
{{- end }}

{{/*
The kube-scheduler image tag: scheduler.image.tag, or else the API server's own version
(major.minor.patch, without a distribution suffix such as -eks-… or +k3s1). Kubernetes'
version-skew policy allows kube-scheduler to be older than the API server, never newer:
https://kubernetes.io/releases/version-skew-policy/#kube-controller-manager-kube-scheduler-and-cloud-controller-manager
*/}}
{{- define "kqe.schedulerImageTag" -}}
{{- if .Values.scheduler.image.tag }}
{{- .Values.scheduler.image.tag }}
{{- else }}
{{- $v := semver .Capabilities.KubeVersion.Version }}
{{- printf "v%d.%d.%d" $v.Major $v.Minor $v.Patch }}
{{- end }}
{{- end }}

{{/*
Whether the pod runs several replicas: then a PodDisruptionBudget and a spread are rendered.
*/}}
{{- define "kqe.replicated" -}}
{{- if gt (int .Values.replicaCount) 1 }}true{{ end }}
{{- end }}

{{/*
A Prometheus Operator scrape endpoint's shared fields (ServiceMonitor endpoint or PodMonitor
podMetricsEndpoint), from metrics.serviceMonitor or metrics.podMonitor.
*/}}
{{- define "kqe.scrapeEndpoint" -}}
- port: metrics
  path: /metrics
  scheme: {{ .scheme }}
  {{- with .interval }}
  interval: {{ . }}
  {{- end }}
  {{- with .scrapeTimeout }}
  scrapeTimeout: {{ . }}
  {{- end }}
  {{- with .tlsConfig }}
  tlsConfig:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .authorization }}
  authorization:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .bearerTokenSecret }}
  bearerTokenSecret:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .relabelings }}
  relabelings:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .metricRelabelings }}
  metricRelabelings:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}

{{/*
A monitor needs the metrics listener to scrape: enabling one without it is a mistake, said so.
*/}}
{{- define "kqe.requireMetrics" -}}
{{- if not .Values.metrics.enabled }}
{{- fail "metrics.serviceMonitor.enabled / metrics.podMonitor.enabled need metrics.enabled=true (the metrics listener they scrape)" }}
{{- end }}
{{- end }}

{{- define "kqe.scheme" -}}
{{- if .Values.extender.tls.enabled }}https{{ else }}http{{ end }}
{{- end }}

{{- define "kqe.extenderImage" -}}
{{- printf "%s:%s" .Values.extender.image.repository (default .Chart.AppVersion .Values.extender.image.tag) }}
{{- end }}

{{- define "kqe.tlsSecretName" -}}
{{- required "extender.tls.secretName is required when extender.tls.enabled" .Values.extender.tls.secretName }}
{{- end }}

{{/*
The exec probe. The kubelet probes from the node against the pod IP, which cannot reach a
server bound to 127.0.0.1; an exec probe runs inside the pod's network namespace and works in
every layout (loopback, TLS, mutual TLS) with one code path. healthprobe.py is stdlib only.
Call with (dict "root" $ "path" "/healthz").
*/}}
{{- define "kqe.probeCommand" -}}
{{- $root := .root -}}
- /opt/venv/bin/python3
- -I
- -S
- /opt/queue-extender/healthprobe.py
- {{ printf "%s://127.0.0.1:%d%s" (include "kqe.scheme" $root) (int $root.Values.extender.port) .path }}
{{- if and $root.Values.extender.tls.enabled $root.Values.extender.tls.clientAuth }}
- --cert
- /etc/queue-extender-tls/tls.crt
- --key
- /etc/queue-extender-tls/tls.key
{{- end }}
{{- end }}
