{{/*
Names and labels shared by every template. Names are cut at 63 characters (the DNS label
limit) less the longest suffix a template appends.
*/}}

{{/* The chart's name, or nameOverride. */}}
{{- define "oar-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The prefix of every resource name: fullnameOverride, else the release name when it already
holds the chart's name (release "oar-operator" gives "oar-operator", not
"oar-operator-oar-operator"), else "<release>-<name>". 40 characters leave room for the
longest suffix, "-validating-webhook".
*/}}
{{- define "oar-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- $name := include "oar-operator.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* helm.sh/chart: name and version, "+" not being allowed in a label value. */}}
{{- define "oar-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The labels the Deployment selects its pods by; never change them after install. */}}
{{- define "oar-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "oar-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller-manager
{{- end }}

{{/* The standard labels of every object. */}}
{{- define "oar-operator.labels" -}}
helm.sh/chart: {{ include "oar-operator.chart" . }}
{{ include "oar-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: oar-operator
{{- end }}

{{/* The ServiceAccount the manager runs as. */}}
{{- define "oar-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "oar-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The manager's image: repository@digest when a digest is set, else repository:tag. */}}
{{- define "oar-operator.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{/* Webhook objects; the manager is told these names by flag. */}}
{{- define "oar-operator.webhookService" -}}
{{- printf "%s-webhook" (include "oar-operator.fullname" .) }}
{{- end }}

{{- define "oar-operator.webhookConfiguration" -}}
{{- printf "%s-validating-webhook" (include "oar-operator.fullname" .) }}
{{- end }}

{{- define "oar-operator.mutatingWebhookConfiguration" -}}
{{- printf "%s-engine-injector" (include "oar-operator.fullname" .) }}
{{- end }}

{{/* True ("true") when the engine injector (the mutating webhook for Pods) is served. */}}
{{- define "oar-operator.injector" -}}
{{- if and .Values.webhook.enabled .Values.injector.enabled }}true{{ end }}
{{- end }}

{{/* Seconds of the preStop sleep that drains the webhooks: webhook.drainSeconds, 0 without webhooks. */}}
{{- define "oar-operator.drainSeconds" -}}
{{- if .Values.webhook.enabled }}{{ int .Values.webhook.drainSeconds }}{{ else }}0{{ end }}
{{- end }}

{{/* The engine sidecar's image: injector.image, else the manager's own. */}}
{{- define "oar-operator.injectorImage" -}}
{{- .Values.injector.image | default (include "oar-operator.image" .) }}
{{- end }}

{{/* The sidecar's --injector-run-as-user: auto, none or a UID, written whole (values read
from YAML are floats, which would print as 1.00068e+09). */}}
{{- define "oar-operator.injectorRunAsUser" -}}
{{- $u := .Values.injector.runAsUser | default "auto" }}
{{- if kindIs "string" $u }}{{ $u }}{{ else }}{{ int64 $u }}{{ end }}
{{- end }}

{{/*
The Secret holding the webhooks' serving certificate, named after the mode that writes it:
the chart's own Secret, which the manager fills (self-managed), or the one cert-manager
creates for the Certificate (cert-manager). With one name for both, switching modes would
have Helm create a Secret cert-manager already holds, which fails the upgrade, or delete
the one cert-manager writes into.
*/}}
{{- define "oar-operator.webhookCertSecret" -}}
{{- if eq .Values.webhook.certManagement "cert-manager" }}
{{- printf "%s-webhook-tls" (include "oar-operator.fullname" .) }}
{{- else }}
{{- printf "%s-webhook-cert" (include "oar-operator.fullname" .) }}
{{- end }}
{{- end }}

{{- define "oar-operator.webhookCertificate" -}}
{{- printf "%s-webhook-cert" (include "oar-operator.fullname" .) }}
{{- end }}

{{/* True ("true") when the manager itself issues and rotates the webhook certificate. */}}
{{- define "oar-operator.selfManagedCerts" -}}
{{- if and .Values.webhook.enabled (eq .Values.webhook.certManagement "self-managed") }}true{{ end }}
{{- end }}

{{/* True ("true") when cert-manager issues the webhook certificate. */}}
{{- define "oar-operator.certManagerCerts" -}}
{{- if and .Values.webhook.enabled (eq .Values.webhook.certManagement "cert-manager") }}true{{ end }}
{{- end }}

{{/* True ("true") when cert-manager issues the metrics endpoint's certificate. */}}
{{- define "oar-operator.metricsCertManagerCerts" -}}
{{- if and .Values.metrics.enabled (eq .Values.webhook.certManagement "cert-manager") }}true{{ end }}
{{- end }}

{{/* Metrics objects. */}}
{{- define "oar-operator.metricsService" -}}
{{- printf "%s-metrics" (include "oar-operator.fullname" .) }}
{{- end }}

{{- define "oar-operator.metricsReader" -}}
{{- printf "%s-metrics-reader" (include "oar-operator.fullname" .) }}
{{- end }}

{{- define "oar-operator.metricsCertSecret" -}}
{{- printf "%s-metrics-cert" (include "oar-operator.fullname" .) }}
{{- end }}

{{- define "oar-operator.metricsCertificate" -}}
{{- printf "%s-metrics-cert" (include "oar-operator.fullname" .) }}
{{- end }}

{{/* Where the manager reads the metrics certificate cert-manager issues (--metrics-cert-dir). */}}
{{- define "oar-operator.metricsCertDir" -}}
/tmp/k8s-metrics-server/serving-certs
{{- end }}

{{/*
The labels of the metrics Service that its ServiceMonitor selects by: the pods' selector
labels, which the webhook Service carries too, and one only the metrics Service has.
*/}}
{{- define "oar-operator.metricsServiceSelectorLabels" -}}
{{ include "oar-operator.selectorLabels" . }}
rules.oar.dev/endpoint: metrics
{{- end }}
