{{/* The chart's name, and the release's full name (at most 63 characters, a DNS label). */}}
{{- define "intake.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "intake.fullname" -}}
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

{{- define "intake.selectorLabels" -}}
app.kubernetes.io/name: {{ include "intake.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "intake.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "intake.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The Secret holding master-key and admin-token. */}}
{{- define "intake.secretName" -}}
{{- default (include "intake.fullname" .) .Values.secrets.existingSecret }}
{{- end }}

{{/* The Secret holding the PostgreSQL URL. */}}
{{- define "intake.databaseSecretName" -}}
{{- default (include "intake.fullname" .) .Values.postgres.existingSecret }}
{{- end }}

{{/* Whether the chart renders a Secret of its own. */}}
{{- define "intake.ownsSecret" -}}
{{- if or (not .Values.secrets.existingSecret) (and .Values.postgres.enabled (not .Values.postgres.existingSecret)) }}true{{ end }}
{{- end }}

{{/* Refuses values that cannot run, naming why. */}}
{{- define "intake.validate" -}}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.postgres.enabled) }}
{{- fail "replicaCount > 1 needs postgres.enabled: the embedded store belongs to one process" }}
{{- end }}
{{- if and .Values.postgres.enabled (not .Values.postgres.url) (not .Values.postgres.existingSecret) }}
{{- fail "postgres.enabled needs postgres.url or postgres.existingSecret" }}
{{- end }}
{{- if and .Values.postgres.url .Values.postgres.existingSecret }}
{{- fail "postgres: give url or existingSecret, not both" }}
{{- end }}
{{- if and .Values.postgres.url (not .Values.postgres.enabled) }}
{{- fail "postgres.url is set but postgres.enabled is false: intake would use the embedded store" }}
{{- end }}
{{- if and .Values.secrets.existingSecret (or .Values.secrets.masterKey .Values.secrets.adminToken) }}
{{- fail "secrets: give existingSecret or masterKey/adminToken, not both" }}
{{- end }}
{{- end }}
