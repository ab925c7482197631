{{/*
The one place values become the binaries' flags and environment. Empty settings are left out so
that the binaries' defaults apply.
*/}}

{{- define "karpenter.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}{{ with .Values.image.digest }}@{{ . }}{{ end }}
{{- end }}

{{- define "karpenter.controller.args" -}}
- --metrics-bind-address=:8080
- --health-probe-bind-address=:8081
- --leader-elect=true
- --log-format=json
- --log-level={{ .Values.logLevel }}
{{- with .Values.settings.clusterName }}
- --cluster-name={{ . }}
{{- end }}
{{- with .Values.settings.clusterEndpoint }}
- --cluster-endpoint={{ . }}
{{- end }}
{{- with .Values.settings.aws.region }}
- --aws-region={{ . }}
{{- end }}
{{- with .Values.settings.aws.defaultInstanceProfile }}
- --aws-default-instance-profile={{ . }}
{{- end }}
{{- if not .Values.settings.bindPods }}
- --bind-pods=false
{{- end }}
{{- end }}

{{- define "karpenter.controller.env" -}}
# Where HorizontalAutoscalers send their PromQL: the Prometheus that scrapes this pod.
- name: PROMETHEUS_URI
  value: {{ .Values.settings.prometheusURI | quote }}
{{- end }}

{{- define "karpenter.webhook.args" -}}
- --service-name=karpenter-webhook
- --secret-name=karpenter-webhook-cert
- --port=8443
- --defaulting-webhook-name=defaulting.webhook.karpenter.sh
- --validation-webhook-name=validation.webhook.karpenter.sh
- --leader-elect=true
- --log-format=json
- --log-level={{ .Values.logLevel }}
{{- end }}

{{/* nodeSelector, tolerations and affinity of both Deployments' pods. */}}
{{- define "karpenter.scheduling" -}}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
