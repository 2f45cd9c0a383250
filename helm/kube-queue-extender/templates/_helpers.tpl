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
{{- default (include "kqe.fullname" .) .Values.serviceAccount.name }}
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
Whether the extender listens on every interface. Only then is it reachable from outside the
pod (Prometheus, kubelet); by default it binds 127.0.0.1 and only kube-scheduler reaches it.
Returns "true" or "".
*/}}
{{- define "kqe.exposed" -}}
{{- if or .Values.metrics.enabled .Values.extender.listenAll }}true{{ end }}
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
- /usr/local/bin/python3
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
