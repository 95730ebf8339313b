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

{{/* The operator image: repository@digest when image.digest is set (the tag is then ignored), else
repository:tag (the tag defaults to the chart's appVersion). */}}
{{- define "oasis.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* A sandbox control-plane image (a values mapping with repository, tag, digest): repository@digest when
the digest is set (the tag is then ignored), else repository:tag. */}}
{{- define "oasis.imageRef" -}}
{{- if .digest }}
{{- printf "%s@%s" .repository .digest }}
{{- else }}
{{- printf "%s:%s" .repository .tag }}
{{- end }}
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

{{/* Pod and container security settings shared by every workload of the chart (values
podSecurityContext and securityContext; a key set to null is left out, e.g. runAsUser on OpenShift,
which assigns a uid of the namespace's range). */}}
{{- define "oasis.podSecurityContext" -}}
{{- toYaml .Values.podSecurityContext }}
{{- end }}

{{- define "oasis.containerSecurityContext" -}}
{{- toYaml .Values.securityContext }}
{{- end }}

{{/* Name of the gateway Service. */}}
{{- define "oasis.gatewayService" -}}
{{- printf "%s-gateway" (include "oasis.fullname" .) }}
{{- end }}

{{/* The kubernetes.io/tls Secret the gateway serves (empty: the operator's own CA). */}}
{{- define "oasis.gatewayTLSSecret" -}}
{{- if .Values.gateway.tls.secretName }}
{{- .Values.gateway.tls.secretName }}
{{- else if .Values.gateway.tls.certManager.enabled }}
{{- printf "%s-gateway-tls" (include "oasis.fullname" .) }}
{{- end }}
{{- end }}

{{/* Host names agents may use besides the Service (comma-separated): the Ingress host. */}}
{{- define "oasis.gatewayHosts" -}}
{{- if and .Values.gateway.ingress.enabled .Values.gateway.ingress.host }}
{{- .Values.gateway.ingress.host }}
{{- end }}
{{- end }}

{{/* Every name the gateway certificate covers (one per line, no repeats): the Service's four DNS forms,
the Ingress host and the host of externalURL; operator/oasis_operator/gateway/tls.py serving_names makes
the same list for its own certificate, and a chart test keeps the two equal. */}}
{{- define "oasis.gatewayDNSNames" -}}
{{- $svc := include "oasis.gatewayService" . }}
{{- $ns := .Release.Namespace }}
{{- $names := list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.cluster.local" $svc $ns) }}
{{- with include "oasis.gatewayHosts" . }}
{{- $names = append $names . }}
{{- end }}
{{- with .Values.gateway.externalURL }}
{{- $names = append $names (urlParse .).hostname }}
{{- end }}
{{- range uniq $names }}
{{ . }}
{{- end }}
{{- end }}
