{{/* Chart name, truncated to a DNS label. */}}
{{- define "oasis.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name of the release's objects. */}}
{{- define "oasis.fullname" -}}
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

{{/* Names of cluster-scoped objects carry the namespace: two releases of one name must not collide. */}}
{{- define "oasis.clusterName" -}}
{{- printf "%s-%s" .Release.Namespace (include "oasis.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "oasis.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "oasis.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "oasis.selectorLabels" -}}
app.kubernetes.io/name: {{ include "oasis.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Selector of the operator pod. */}}
{{- define "oasis.operatorSelector" -}}
{{ include "oasis.selectorLabels" . }}
app.kubernetes.io/component: operator
{{- end }}

{{- define "oasis.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "oasis.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "oasis.agentServiceAccountName" -}}
{{- default (printf "%s-agent" (include "oasis.fullname" .)) .Values.agents.serviceAccount.name }}
{{- end }}

{{- define "oasis.agentNamespace" -}}
{{- default .Release.Namespace .Values.agents.namespace }}
{{- end }}

{{/* Namespaces watched in namespaced mode (the release namespace when none are listed). */}}
{{- define "oasis.watchNamespaces" -}}
{{- if .Values.watch.namespaces }}
{{- join "," .Values.watch.namespaces }}
{{- else }}
{{- .Release.Namespace }}
{{- end }}
{{- end }}

{{- define "oasis.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "oasis.sandboxPkiSecret" -}}
{{- default (printf "%s-sandbox-pki" (include "oasis.fullname" .)) .Values.sandbox.controlPlane.pkiSecret }}
{{- end }}

{{/* The Secret holding the sandbox cluster's kubeconfig for the operator (empty in host mode). */}}
{{- define "oasis.sandboxKubeconfigSecret" -}}
{{- if eq .Values.sandbox.mode "external" }}
{{- required "sandbox.kubeconfigSecret.name is required when sandbox.mode=external" .Values.sandbox.kubeconfigSecret.name }}
{{- else if eq .Values.sandbox.mode "controlPlane" }}
{{- default (include "oasis.sandboxPkiSecret" .) .Values.sandbox.kubeconfigSecret.name }}
{{- end }}
{{- end }}

{{/* URL the gateway advertises to agents. */}}
{{- define "oasis.gatewayURL" -}}
{{- if .Values.gateway.externalURL }}
{{- .Values.gateway.externalURL }}
{{- else if and .Values.gateway.ingress.enabled .Values.gateway.ingress.host }}
{{- printf "https://%s" .Values.gateway.ingress.host }}
{{- else }}
{{- printf "https://%s-gateway.%s.svc:%v" (include "oasis.fullname" .) .Release.Namespace .Values.gateway.service.port }}
{{- end }}
{{- end }}

{{/* Restricted pod and container security settings shared by every workload of the chart. */}}
{{- define "oasis.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "oasis.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
capabilities:
  drop: ["ALL"]
{{- end }}
