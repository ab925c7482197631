{{/*
Names, labels and selectors are upstream Karpenter's, so that ServiceMonitors, scrape
configurations and kubectl commands written for upstream's chart keep matching.
*/}}

{{- define "karpenter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's name when it contains the chart's, else <release>-<name>. */}}
{{- define "karpenter.fullname" -}}
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

{{/* Labels Helm adds to every object it templates; config/ has none of them. */}}
{{- define "karpenter.helmLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "karpenter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "karpenter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The webhook's pods are not the controller's: upstream's selectors must not take them. */}}
{{- define "karpenter.webhook.selectorLabels" -}}
app.kubernetes.io/name: {{ include "karpenter.name" . }}-webhook
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "karpenter.labels" -}}
{{ include "karpenter.selectorLabels" . }}
app.kubernetes.io/component: controller
{{ include "karpenter.helmLabels" . }}
{{- end }}

{{- define "karpenter.webhook.labels" -}}
{{ include "karpenter.webhook.selectorLabels" . }}
app.kubernetes.io/component: webhook
{{ include "karpenter.helmLabels" . }}
{{- end }}

{{- define "karpenter.annotations" -}}
{{- with .Values.additionalAnnotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{- define "karpenter.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "karpenter.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.create is false: set serviceAccount.name to the controller's existing ServiceAccount" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The images. controller.image is upstream's repository, tag and digest, or one reference as in
upstream's v0.5 chart; image is this chart's earlier name for it. The source chart names no
image, and upstream's registry does not hold this project's.
*/}}
{{- define "karpenter.controller.image" -}}
{{- $image := .Values.controller.image }}
{{- $reference := "" }}
{{- if kindIs "string" $image }}
{{- $reference = $image }}
{{- else }}
{{- $earlier := .Values.image | default dict }}
{{- $repository := $image.repository | default $earlier.repository }}
{{- if not $repository }}
{{- fail "controller.image.repository is not set: this chart names no default image. Set it, with controller.image.digest, to the registry you pushed this project's image to (`make release`; docs/getting-started.md#the-image)." }}
{{- end }}
{{- $reference = printf "%s:%s" $repository ($image.tag | default $earlier.tag | default .Chart.AppVersion) }}
{{- with $image.digest | default $earlier.digest }}
{{- $reference = printf "%s@%s" $reference . }}
{{- end }}
{{- end }}
{{- include "karpenter.refuseUpstreamImage" (dict "value" "controller.image" "reference" $reference) }}
{{- $reference }}
{{- end }}

{{- define "karpenter.webhook.image" -}}
{{- with .Values.webhook.image }}
{{- include "karpenter.refuseUpstreamImage" (dict "value" "webhook.image" "reference" .) }}
{{- . }}
{{- else }}
{{- include "karpenter.controller.image" . }}
{{- end }}
{{- end }}

{{- define "karpenter.refuseUpstreamImage" -}}
{{- if hasPrefix "public.ecr.aws/karpenter/" .reference }}
{{- fail (printf "%s names %s, in upstream Karpenter's registry, which does not hold this project's image: the pods would run another project's binary. Set controller.image.repository and controller.image.digest to the registry you pushed this project's image to (docs/getting-started.md#the-image)." .value .reference) }}
{{- end }}
{{- end }}

{{/*
The controller's settings, as the environment variables of docs/reference/settings.md. Empty
values are left out so that the controller's defaults apply; controller.env comes last, so a
variable named there overrides the chart's.
*/}}
{{- define "karpenter.controller.env" -}}
{{- $settings := .Values.settings }}
- name: METRICS_BIND_ADDRESS
  value: ":{{ .Values.controller.metrics.port }}"
- name: HEALTH_PROBE_BIND_ADDRESS
  value: ":{{ .Values.controller.healthProbe.port }}"
- name: LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
{{- with .Values.logOutputPaths }}
- name: LOG_OUTPUT_PATHS
  value: {{ join "," . | quote }}
{{- end }}
{{- with .Values.logErrorOutputPaths }}
- name: LOG_ERROR_OUTPUT_PATHS
  value: {{ join "," . | quote }}
{{- end }}
# Where HorizontalAutoscalers send their PromQL: the Prometheus that scrapes this pod.
- name: PROMETHEUS_URI
  value: {{ $settings.prometheusURI | quote }}
{{- if not $settings.bindPods }}
- name: BIND_PODS
  value: "false"
{{- end }}
{{- with $settings.clusterName | default .Values.controller.clusterName }}
- name: CLUSTER_NAME
  value: {{ . | quote }}
{{- end }}
{{- with $settings.clusterEndpoint | default .Values.controller.clusterEndpoint }}
- name: CLUSTER_ENDPOINT
  value: {{ . | quote }}
{{- end }}
{{- range $name, $value := dict "CLUSTER_CA_BUNDLE" $settings.clusterCABundle "BATCH_MAX_DURATION" $settings.batchMaxDuration "BATCH_IDLE_DURATION" $settings.batchIdleDuration "INTERRUPTION_QUEUE" $settings.interruptionQueue "VM_MEMORY_OVERHEAD_PERCENT" $settings.vmMemoryOverheadPercent "RESERVED_ENIS" $settings.reservedENIs "MIN_VALUES_POLICY" $settings.minValuesPolicy "AWS_REGION" $settings.aws.region }}
{{- if not (eq (toString $value) "" "<nil>") }}
- name: {{ $name }}
  value: {{ toString $value | quote }}
{{- end }}
{{- end }}
{{- with $settings.aws.defaultInstanceProfile | default (.Values.aws | default dict).defaultInstanceProfile }}
- name: AWS_DEFAULT_INSTANCE_PROFILE
  value: {{ . | quote }}
{{- end }}
{{- if $settings.isolatedVPC }}
- name: ISOLATED_VPC
  value: "true"
{{- end }}
{{- $gates := list }}
{{- if not (kindIs "invalid" $settings.featureGates.spotToSpotConsolidation) }}
{{- $gates = append $gates (printf "SpotToSpotConsolidation=%v" $settings.featureGates.spotToSpotConsolidation) }}
{{- end }}
{{- if $settings.featureGates.nodeOverlay }}
{{- $gates = append $gates "NodeOverlay=true" }}
{{- end }}
{{- if $gates }}
- name: FEATURE_GATES
  value: {{ join "," $gates | quote }}
{{- end }}
{{- end }}

{{- define "karpenter.webhook.args" -}}
- --service-name=karpenter-webhook
- --secret-name=karpenter-webhook-cert
- --port={{ .Values.webhook.port }}
- --defaulting-webhook-name=defaulting.webhook.karpenter.sh
- --validation-webhook-name=validation.webhook.karpenter.sh
- --leader-elect=true
- --log-format=json
{{- end }}

{{/*
Where a pod runs: the chart-wide nodeSelector, affinity, topology spread and tolerations, with a
Deployment's own (controller.* or webhook.*, the v0.5 chart's keys) merged in. Pod affinity
terms and spread constraints without a labelSelector get one selecting the Deployment's pods.
Called with dict "root" $ "own" <controller or webhook values> "selector" <its selector labels>.
*/}}
{{- define "karpenter.placement" -}}
{{- $values := .root.Values }}
{{- $selector := dict "matchLabels" (.selector | fromYaml) }}
{{- $nodeSelector := merge (deepCopy (.own.nodeSelector | default dict)) (deepCopy ($values.nodeSelector | default dict)) }}
{{- with $nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- $affinity := deepCopy (.own.affinity | default $values.affinity | default dict) }}
{{- range $kind := list "podAffinity" "podAntiAffinity" }}
{{- with index $affinity $kind }}
{{- range .requiredDuringSchedulingIgnoredDuringExecution }}
{{- if not (hasKey . "labelSelector") }}{{ $_ := set . "labelSelector" $selector }}{{ end }}
{{- end }}
{{- range .preferredDuringSchedulingIgnoredDuringExecution }}
{{- if not (hasKey .podAffinityTerm "labelSelector") }}{{ $_ := set .podAffinityTerm "labelSelector" $selector }}{{ end }}
{{- end }}
{{- end }}
{{- end }}
{{- with $affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- $constraints := deepCopy ($values.topologySpreadConstraints | default list) }}
{{- range $constraints }}
{{- if not (hasKey . "labelSelector") }}{{ $_ := set . "labelSelector" $selector }}{{ end }}
{{- end }}
{{- with $constraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with concat ($values.tolerations | default list) (.own.tolerations | default list) }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* What both pods share: pull secrets, scheduler, DNS, priority, security context. */}}
{{- define "karpenter.podCommon" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.schedulerName }}
schedulerName: {{ . | quote }}
{{- end }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . | quote }}
{{- end }}
# Shutdown releases the leader lease and lets in-flight work finish.
terminationGracePeriodSeconds: {{ .Values.terminationGracePeriodSeconds | default 30 }}
{{- with .Values.dnsPolicy }}
dnsPolicy: {{ . }}
{{- end }}
{{- with .Values.dnsConfig }}
dnsConfig:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.podSecurityContext }}
securityContext:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
Values accepted for upstream's values files that have no effect here, each with why, when set to
other than upstream's default (README.md lists them). NOTES.txt prints them.
*/}}
{{- define "karpenter.warnings" -}}
{{- $s := .Values.settings }}
{{- if and $s.preferencePolicy (ne $s.preferencePolicy "Respect") }}
- settings.preferencePolicy={{ $s.preferencePolicy }}: preferences are always respected here, as kube-scheduler does.
{{- end }}
{{- if $s.eksControlPlane }}
- settings.eksControlPlane: the endpoint, CA and service CIDR are the controller's own or settings.*; eks:DescribeCluster is read only for the service CIDR.
{{- end }}
{{- if $s.enableZonalShift }}
- settings.enableZonalShift: zonal shifts are not followed here.
{{- end }}
{{- if eq (toString $s.ignoreDRARequests) "false" }}
- settings.ignoreDRARequests=false: pods' resource claims are always left to kube-scheduler here.
{{- end }}
{{- if $s.disableClusterStateObservability }}
- settings.disableClusterStateObservability: the cluster-state metrics cannot be turned off here.
{{- end }}
{{- if $s.disableDryRun }}
- settings.disableDryRun: there are no EC2NodeClasses to dry-run here.
{{- end }}
{{- range $name := list "amiRefreshInterval" "subnetRefreshInterval" }}
{{- $value := index $s $name }}
{{- if and $value (ne (toString $value) "1m") }}
- settings.{{ $name }}={{ $value }}: the AMI (an hour) and subnets (a minute) are cached for fixed times here.
{{- end }}
{{- end }}
{{- range $gate, $why := dict "nodeRepair" "nodes are not repaired here" "reservedCapacity" "capacity reservations are not launched into here" "staticCapacity" "there is no static capacity here" "capacityBuffer" "there are no CapacityBuffers here" }}
{{- if index $s.featureGates $gate }}
- settings.featureGates.{{ $gate }}: {{ $why }}.
{{- end }}
{{- end }}
{{- if $s.awsFeatureGates.nodeClassCEL }}
- settings.awsFeatureGates.nodeClassCEL: there are no EC2NodeClasses here.
{{- end }}
{{- end }}
