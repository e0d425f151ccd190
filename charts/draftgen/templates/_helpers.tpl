{{/* Chart name, truncated to leave room for suffixes. */}}
{{- define "draftgen.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{/* Full name: <release>-<chart>, or the release alone when it already contains the chart name. */}}
{{- define "draftgen.fullname" -}}
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

{{- define "draftgen.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels on every object the chart creates. */}}
{{- define "draftgen.labels" -}}
helm.sh/chart: {{ include "draftgen.chart" . }}
app.kubernetes.io/name: {{ include "draftgen.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: draftgen
{{- end -}}

{{/* Labels that select the operator pods. */}}
{{- define "draftgen.selectorLabels" -}}
app.kubernetes.io/name: {{ include "draftgen.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{- define "draftgen.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "draftgen.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "draftgen.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "draftgen.peeringName" -}}
{{- default (include "draftgen.fullname" .) .Values.operator.peering.name -}}
{{- end -}}

{{/* Namespaces the operator serves, as a JSON list; [] means every namespace
(operator.clusterWide, an explicit choice). By default only the release's namespace. */}}
{{- define "draftgen.watchNamespaces" -}}
{{- if .Values.operator.clusterWide -}}
{{- if .Values.operator.watchNamespaces -}}
{{- fail "operator.clusterWide: true serves every namespace: leave operator.watchNamespaces empty, or set operator.clusterWide: false to serve only those namespaces" -}}
{{- end -}}
[]
{{- else -}}
{{- toJson (default (list .Release.Namespace) .Values.operator.watchNamespaces) -}}
{{- end -}}
{{- end -}}

{{/* Images a GenerationJob may run (operator.policy): the admin's prefixes, plus the chart's
own images unless policy.allowChartImages is off. Empty allows every image. */}}
{{- define "draftgen.allowedImagePrefixes" -}}
{{- $prefixes := .Values.operator.policy.allowedImagePrefixes -}}
{{- if .Values.operator.policy.allowChartImages -}}
{{- $prefixes = concat $prefixes (list (include "draftgen.image" .) .Values.serverDefaults.image) -}}
{{- with .Values.generator.image }}{{ $prefixes = append $prefixes . }}{{ end -}}
{{- end -}}
{{- join "," (uniq $prefixes) -}}
{{- end -}}
