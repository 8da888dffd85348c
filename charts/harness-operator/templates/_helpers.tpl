{{/*
Name prefix of the release's namespaced objects: fullnameOverride, else the
release name when it already contains "harness-operator", else
<release>-harness-operator (truncated to leave room for suffixes).
*/}}
{{- define "harness-operator.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else if contains "harness-operator" .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-harness-operator" .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/*
Labels of every object. app.kubernetes.io/name is always "harness-operator":
the NetworkPolicies the operator puts in front of app-server pods admit pods
with this label (and component manager|dispatcher) from the release namespace.
*/}}
{{- define "harness-operator.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: harness-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: harness-operator
{{- end -}}

{{/* Selector labels of one component; call with (list $ "manager"). */}}
{{- define "harness-operator.selectorLabels" -}}
{{- $ctx := index . 0 -}}
app.kubernetes.io/name: harness-operator
app.kubernetes.io/instance: {{ $ctx.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{/* Labels of one component's objects; call with (list $ "manager"). */}}
{{- define "harness-operator.componentLabels" -}}
{{ include "harness-operator.labels" (index . 0) }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{/*
The image of one component; call with (list $ "manager"). A digest, when set,
pins the image (<repository>/<component>@sha256:…); otherwise the tag does.
*/}}
{{- define "harness-operator.image" -}}
{{- $ := index . 0 -}}
{{- $component := index . 1 -}}
{{- $digest := get $.Values.image.digests $component -}}
{{- if $digest -}}
{{- printf "%s/%s@%s" $.Values.image.repository $component $digest -}}
{{- else -}}
{{- printf "%s/%s:%s" $.Values.image.repository $component ($.Values.image.tag | default $.Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{/* Fixed names the manager's code looks objects up by (internal/manager/webhook). */}}
{{- define "harness-operator.webhookSecretName" -}}harness-operator-webhook-tls{{- end -}}
{{- define "harness-operator.validatingWebhookName" -}}harness-operator-validating{{- end -}}
{{- define "harness-operator.mutatingWebhookName" -}}harness-operator-mutating{{- end -}}

{{- define "harness-operator.webhookServiceName" -}}{{ include "harness-operator.fullname" . }}-webhook{{- end -}}
{{- define "harness-operator.dispatcherServiceName" -}}{{ include "harness-operator.fullname" . }}-dispatcher{{- end -}}
{{- define "harness-operator.managerServiceAccountName" -}}{{ include "harness-operator.fullname" . }}-manager{{- end -}}
{{- define "harness-operator.dispatcherServiceAccountName" -}}{{ include "harness-operator.fullname" . }}-dispatcher{{- end -}}
{{- /* The Secret of the dispatcher's self-managed CA and certificate (dispatcher.tls.secretName empty). */ -}}
{{- define "harness-operator.dispatcherTLSSecretName" -}}{{ include "harness-operator.fullname" . }}-dispatcher-tls{{- end -}}

{{/*
True (non-empty) when the in-cluster manager serves the admission webhooks:
not disabled, and not pointed at an out-of-cluster URL.
*/}}
{{- define "harness-operator.webhooksInCluster" -}}
{{- if and (ne .Values.webhook.certMode "disabled") (not .Values.webhook.url) -}}true{{- end -}}
{{- end -}}

{{/* The --webhook-cert-mode of the in-cluster manager. */}}
{{- define "harness-operator.managerCertMode" -}}
{{- if .Values.webhook.url -}}disabled{{- else -}}{{ .Values.webhook.certMode }}{{- end -}}
{{- end -}}

{{/*
The restricted Pod Security Standard, for every pod and container. 65532 is
the conventional non-root user of distroless images.
*/}}
{{- define "harness-operator.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
fsGroupChangePolicy: OnRootMismatch
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "harness-operator.containerSecurityContext" -}}
runAsNonRoot: true
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop:
    - ALL
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/*
The external app-server dial policy, passed identically to the manager and the
dispatcher (both dial spec.external.url). Absent flags: the binaries' default,
which refuses every private and shared range.
*/}}
{{- define "harness-operator.externalServerArgs" -}}
{{- with .Values.externalServers.refusedCIDRs }}
- --external-refused-cidrs={{ join "," . }}
{{- end }}
{{- with .Values.externalServers.allowedCIDRs }}
- --external-allowed-cidrs={{ join "," . }}
{{- end }}
{{- end -}}

{{/*
The model gateway (modelGateway.enabled): its Service, ServiceAccount, the
port its pods serve on (the Service's port too), and the comma form of its
pods' selector labels for the manager's --model-gateway-pod-labels. Each is
defined here once; the manager, the dispatcher and the NetworkPolicies use
these.
*/}}
{{- define "harness-operator.modelGatewayServiceName" -}}{{ include "harness-operator.fullname" . }}-model-gateway{{- end -}}
{{- define "harness-operator.modelGatewayServiceAccountName" -}}{{ include "harness-operator.fullname" . }}-model-gateway{{- end -}}
{{- define "harness-operator.modelGatewayPort" -}}8443{{- end -}}
{{- define "harness-operator.modelGatewayPodLabels" -}}
{{- $l := include "harness-operator.selectorLabels" (list . "model-gateway") | fromYaml -}}
{{- $pairs := list -}}
{{- range $k := keys $l | sortAlpha -}}
{{- $pairs = append $pairs (printf "%s=%s" $k (get $l $k)) -}}
{{- end -}}
{{- join "," $pairs -}}
{{- end -}}
{{- /* The Secret of the dispatcher's certificate, which the gateway serves too: dispatcher.tls.secretName, else the self-managed one. */ -}}
{{- define "harness-operator.dispatcherServingSecretName" -}}{{ .Values.dispatcher.tls.secretName | default (include "harness-operator.dispatcherTLSSecretName" .) }}{{- end -}}

{{/* The in-cluster DNS names of a Service; call with (list $ "<service name>"). */}}
{{- define "harness-operator.serviceDNSNames" -}}
{{- $ := index . 0 -}}
{{- $svc := index . 1 -}}
{{- $ns := $.Release.Namespace -}}
{{- printf "%s.%s.svc,%s,%s.%s,%s.%s.svc.cluster.local" $svc $ns $svc $svc $ns $svc $ns -}}
{{- end -}}

{{/*
The cluster DNS pods (CoreDNS keeps the kube-dns label) in kube-system, as
the manager's app-server NetworkPolicies name them.
*/}}
{{- define "harness-operator.clusterDNSEgress" -}}
- to:
    - namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: kube-system
      podSelector:
        matchLabels:
          k8s-app: kube-dns
  ports:
    - port: 53
      protocol: UDP
    - port: 53
      protocol: TCP
{{- end -}}

{{/*
The public internet as the manager's app-server egress names it: every
address but the private, shared, link-local (cloud metadata) and loopback
ranges.
*/}}
{{- define "harness-operator.publicInternetPeers" -}}
- ipBlock:
    cidr: 0.0.0.0/0
    except: [0.0.0.0/8, 10.0.0.0/8, 100.64.0.0/10, 127.0.0.0/8, 169.254.0.0/16, 172.16.0.0/12, 192.168.0.0/16]
- ipBlock:
    cidr: ::/0
    except: ["::1/128", "fc00::/7", "fe80::/10"]
{{- end -}}
