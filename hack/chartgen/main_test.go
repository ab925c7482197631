package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTemplateFile(t *testing.T) {
	for _, c := range []struct {
		name, manifest string
		want           []string
		wantErr        string
	}{{
		name: "namespaces and subjects follow the release and its values, comments stay",
		manifest: `# a comment
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: karpenter-webhook
  namespace: karpenter
subjects:
- kind: ServiceAccount
  name: karpenter
  namespace: karpenter
`,
		want: []string{`apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: karpenter-webhook
  namespace: {{ .Release.Namespace }}
subjects:
- kind: ServiceAccount
  name: {{ include "karpenter.serviceAccountName" . }}
  namespace: {{ .Release.Namespace }}
`},
	}, {
		name: "a grant on the namespace object names the release's",
		manifest: `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: karpenter-webhook
rules:
- apiGroups: [""]
  resources: ["namespaces"]
  resourceNames: ["karpenter"]
  verbs: ["get"]
`,
		want: []string{`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: karpenter-webhook
rules:
- apiGroups: [""]
  resources: ["namespaces"]
  resourceNames: [{{ .Release.Namespace }}]
  verbs: ["get"]
`},
	}, {
		name: "a service account named in a webhook's match condition is the release's",
		manifest: `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: validation.webhook.karpenter.sh
webhooks:
- name: validation.webhook.karpenter.sh
  matchConditions:
  - name: not-the-controller
    expression: "request.userInfo.username != 'system:serviceaccount:karpenter:karpenter'"
`,
		want: []string{`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: validation.webhook.karpenter.sh
webhooks:
- name: validation.webhook.karpenter.sh
  matchConditions:
  - name: not-the-controller
    expression: "request.userInfo.username != 'system:serviceaccount:{{ .Release.Namespace }}:karpenter'"
`},
	}, {
		name: "objects the chart templates itself are left out",
		manifest: `apiVersion: v1
kind: ServiceAccount
metadata:
  name: karpenter
  namespace: karpenter
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: karpenter-webhook
  namespace: karpenter
`,
		want: []string{`apiVersion: v1
kind: ServiceAccount
metadata:
  name: karpenter-webhook
  namespace: {{ .Release.Namespace }}
`},
	}, {
		name: "a namespace in a form not templated is an error",
		manifest: `apiVersion: v1
kind: Secret
metadata: {name: cert, namespace: karpenter}
`,
		wantErr: "still names the namespace karpenter at .metadata.namespace",
	}} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "manifest.yaml")
			if err := os.WriteFile(path, []byte(c.manifest), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := templateFile(path)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "---\n") != strings.Join(c.want, "---\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "---\n"), strings.Join(c.want, "---\n"))
			}
		})
	}
}
