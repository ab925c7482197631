package release

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"karpenter.sh/karpenter/pkg/test/environment"
)

// The values files of upstream Karpenter's charts, kept verbatim (their sources in their
// headers), and a user's file of the v0.5 era.
var (
	upstreamValues    = filepath.Join("testdata", "upstream-v1.14.1-values.yaml")
	upstreamV05Values = filepath.Join("testdata", "upstream-v0.5.6-values.yaml")
	v05UserValues     = filepath.Join("testdata", "v0.5-era-user-values.yaml")
)

// ourImage names an image of this project: upstream's values files name upstream's registry,
// which the chart refuses.
var ourImage = []string{
	"--set", "controller.image.repository=registry.example/karpenter",
	"--set", "controller.image.tag=v0.0.0-test",
	"--set", "controller.image.digest=sha256:" + strings.Repeat("0", 64),
}

// rendered is what one helm run made: the objects and the release notes (NOTES.txt).
type rendered struct {
	objects []*unstructured.Unstructured
	notes   string
}

// helmInstall installs the chart as release karpenter into namespace karpenter of env, or only
// asks the apiserver to (dryRun), and returns the release's objects and notes.
func helmInstall(t *testing.T, env *environment.Environment, dryRun bool, args ...string) rendered {
	t.Helper()
	command := []string{"install", "karpenter", chart, "--kubeconfig", env.KubeconfigPath,
		"--namespace", namespace, "--create-namespace", "--output", "json"}
	if dryRun {
		command = append(command, "--dry-run=server")
	}
	out, err := helm(append(command, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	var release struct {
		Manifest string `json:"manifest"`
		Info     struct {
			Notes string `json:"notes"`
		} `json:"info"`
	}
	if err := json.Unmarshal(out, &release); err != nil {
		t.Fatalf("decoding helm's release, %v\n%s", err, out)
	}
	return rendered{objects: decode(t, []byte(release.Manifest)), notes: release.Info.Notes}
}

// helmTemplateArgs renders the chart offline with helm's own arguments (-f, --set-json, ...).
func helmTemplateArgs(t *testing.T, args ...string) rendered {
	t.Helper()
	out, err := helm(append([]string{"template", "karpenter", chart, "--namespace", namespace}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return rendered{objects: decode(t, out)}
}

func (r rendered) find(kind, name string) *unstructured.Unstructured {
	for _, object := range r.objects {
		if object.GetKind() == kind && object.GetName() == name {
			return object
		}
	}
	return nil
}

func (r rendered) get(t *testing.T, kind, name string) *unstructured.Unstructured {
	t.Helper()
	object := r.find(kind, name)
	if object == nil {
		var have []string
		for _, o := range r.objects {
			have = append(have, key(o))
		}
		t.Fatalf("no %s %s among %s", kind, name, strings.Join(have, ", "))
	}
	return object
}

// field reads a field of an object by its dotted path; a number indexes a list.
func field(object *unstructured.Unstructured, path string) any {
	var value any = object.Object
	for _, step := range strings.Split(path, ".") {
		switch v := value.(type) {
		case map[string]any:
			value = v[step]
		case []any:
			var i int
			if _, err := fmt.Sscan(step, &i); err != nil || i >= len(v) {
				return nil
			}
			value = v[i]
		default:
			return nil
		}
	}
	return value
}

// yamlOf is a value as compact YAML, to compare and to print.
func yamlOf(value any) string {
	out, _ := yaml.Marshal(value)
	return strings.TrimSpace(string(out))
}

// container is a Deployment's container by name.
func container(t *testing.T, deployment *unstructured.Unstructured, name string) map[string]any {
	t.Helper()
	containers, _ := field(deployment, "spec.template.spec.containers").([]any)
	for _, c := range containers {
		if c.(map[string]any)["name"] == name {
			return c.(map[string]any)
		}
	}
	t.Fatalf("Deployment %s has no container %s: %s", deployment.GetName(), name, yamlOf(containers))
	return nil
}

// envOf is a container's environment variable, "" when absent.
func envOf(c map[string]any, name string) string {
	variables, _ := c["env"].([]any)
	value := ""
	for _, v := range variables {
		if v := v.(map[string]any); v["name"] == name {
			value = fmt.Sprint(v["value"])
		}
	}
	return value
}

// TestUpstreamValuesFileInstalls installs the chart with upstream Karpenter's own values.yaml:
// refused as it is, since it names upstream's image; with this project's image, installed into
// a real apiserver with upstream's object names, labels, selectors and placement.
func TestUpstreamValuesFileInstalls(t *testing.T) {
	t.Parallel()
	_, err := helm("template", "karpenter", chart, "--namespace", namespace, "-f", upstreamValues)
	if err == nil || !strings.Contains(err.Error(), "another project's binary") {
		t.Errorf("upstream's values.yaml with upstream's image renders (%v); want it refused for running another project's binary", err)
	}

	env := environment.New(t, environment.Options{})
	release := helmInstall(t, env, false, append([]string{"-f", upstreamValues}, ourImage...)...)
	checkUpstreamNames(t, release)

	pod := release.get(t, "Deployment", "karpenter")
	if got := yamlOf(field(pod, "spec.template.spec.nodeSelector")); got != "kubernetes.io/os: linux" {
		t.Errorf("controller nodeSelector %s, want upstream's kubernetes.io/os: linux", got)
	}
	if got := yamlOf(field(pod, "spec.template.spec.tolerations")); !strings.Contains(got, "CriticalAddonsOnly") {
		t.Errorf("controller tolerations %s lack upstream's CriticalAddonsOnly", got)
	}
	if got := yamlOf(field(pod, "spec.template.spec.affinity")); !strings.Contains(got, "karpenter.sh/nodepool") {
		t.Errorf("controller affinity %s does not keep it off the nodes Karpenter launched", got)
	}
	controller := container(t, pod, "controller")
	for name, want := range map[string]string{"BATCH_MAX_DURATION": "10s", "BATCH_IDLE_DURATION": "1s", "LOG_LEVEL": "info", "VM_MEMORY_OVERHEAD_PERCENT": "0.075"} {
		if got := envOf(controller, name); got != want {
			t.Errorf("controller %s=%q, want %q from upstream's values", name, got, want)
		}
	}
	checkRBAC(t, env)
}

// checkUpstreamNames holds a release to upstream's names, labels and selectors, on which users'
// ServiceMonitors, scrape configurations and kubectl commands rely.
func checkUpstreamNames(t *testing.T, release rendered) {
	t.Helper()
	selector := "app.kubernetes.io/instance: karpenter\napp.kubernetes.io/name: karpenter"
	deployment := release.get(t, "Deployment", "karpenter")
	if got := yamlOf(field(deployment, "spec.selector.matchLabels")); got != selector {
		t.Errorf("Deployment karpenter selects\n%s\nwant upstream's\n%s", got, selector)
	}
	service := release.get(t, "Service", "karpenter")
	if got := yamlOf(field(service, "spec.selector")); got != selector {
		t.Errorf("Service karpenter selects\n%s\nwant upstream's\n%s", got, selector)
	}
	for _, label := range strings.Split(selector, "\n") {
		if got := yamlOf(service.GetLabels()); !strings.Contains(got, label) {
			t.Errorf("Service karpenter's labels\n%s\nlack %s, which upstream's ServiceMonitor selects", got, label)
		}
	}
	if got := field(service, "spec.ports.0.name"); got != "http-metrics" {
		t.Errorf("Service karpenter's port is %v, want upstream's http-metrics", got)
	}
	if got := yamlOf(field(release.get(t, "Deployment", "karpenter-webhook"), "spec.template.metadata.labels")); strings.Contains(got, "app.kubernetes.io/name: karpenter\n") {
		t.Errorf("the webhook's pods carry the controller's labels\n%s\nso upstream's selectors would take them for the controller", got)
	}
	release.get(t, "ServiceAccount", "karpenter")
	release.get(t, "PodDisruptionBudget", "karpenter")
}

// TestV05ValuesFilesInstall: upstream v0.5.6's own values.yaml is refused for its images; a
// user's values file of that era, naming the user's images, installs with each value's v0.5
// meaning.
func TestV05ValuesFilesInstall(t *testing.T) {
	t.Parallel()
	_, err := helm("template", "karpenter", chart, "--namespace", namespace, "-f", upstreamV05Values)
	if err == nil || !strings.Contains(err.Error(), "another project's binary") {
		t.Errorf("upstream v0.5.6's values.yaml renders (%v); want it refused for running another project's binary", err)
	}

	env := environment.New(t, environment.Options{})
	release := helmInstall(t, env, false, "-f", v05UserValues)
	checkUpstreamNames(t, release)
	controllerPod := release.get(t, "Deployment", "karpenter")
	controller := container(t, controllerPod, "controller")
	for name, want := range map[string]string{
		"CLUSTER_NAME":                 "prod",
		"CLUSTER_ENDPOINT":             "https://0123456789ABCDEF.gr7.us-west-2.eks.amazonaws.com",
		"AWS_DEFAULT_INSTANCE_PROFILE": "KarpenterNodeInstanceProfile-prod",
		"AWS_REGION":                   "us-west-2",
	} {
		if got := envOf(controller, name); got != want {
			t.Errorf("controller %s=%q, want %q", name, got, want)
		}
	}
	if got := controller["image"]; got != "registry.example/karpenter:v0.0.0-test" {
		t.Errorf("controller image %v", got)
	}
	if got := yamlOf(field(controllerPod, "spec.template.spec.nodeSelector")); !strings.Contains(got, "role: system") {
		t.Errorf("controller nodeSelector %s lacks controller.nodeSelector's role: system", got)
	}
	if got := yamlOf(field(controllerPod, "spec.template.spec.tolerations")); !strings.Contains(got, "dedicated") {
		t.Errorf("controller tolerations %s lack controller.tolerations'", got)
	}
	if got := controllerPod.GetLabels()["team"]; got != "platform" {
		t.Errorf("controller Deployment label team=%q, want additionalLabels' platform", got)
	}
	webhookPod := release.get(t, "Deployment", "karpenter-webhook")
	if got := field(webhookPod, "spec.template.spec.hostNetwork"); got != true {
		t.Errorf("webhook hostNetwork %v, want webhook.hostNetwork's true", got)
	}
	webhook := container(t, webhookPod, "webhook")
	if got := yamlOf(webhook["ports"]); !strings.Contains(got, "containerPort: 9443") {
		t.Errorf("webhook ports %s, want webhook.port's 9443", got)
	}
	if got := yamlOf(webhook["args"]); !strings.Contains(got, "--port=9443") {
		t.Errorf("webhook args %s, want webhook.port's --port=9443", got)
	}
	if got := envOf(webhook, "LOG_LEVEL"); got != "debug" {
		t.Errorf("webhook LOG_LEVEL=%q, want webhook.env's debug", got)
	}
	checkRBAC(t, env)
}

// valueCase is what one upstream value does in this chart: an effect seen in the rendered
// objects, or (for a feature this project does not have) a warning in the release notes.
type valueCase struct {
	// args set the value (helm's --set, --set-json).
	args []string
	// check reports what is wrong with the rendered release, "" when the value took effect.
	check func(t *testing.T, r rendered) string
	// warning is a part of the release notes' warning, for values accepted without an effect.
	warning string
}

func set(values ...string) []string {
	var args []string
	for _, v := range values {
		args = append(args, "--set", v)
	}
	return args
}

func setJSON(values ...string) []string {
	var args []string
	for _, v := range values {
		args = append(args, "--set-json", v)
	}
	return args
}

// wants checks that the YAML of a field of an object contains want.
func wants(kind, name, path, want string) func(*testing.T, rendered) string {
	return func(t *testing.T, r rendered) string {
		object := r.get(t, kind, name)
		if got := yamlOf(field(object, path)); !strings.Contains(got, want) {
			return fmt.Sprintf("%s %s %s is\n%s\nwant it to contain\n%s", kind, name, path, got, want)
		}
		return ""
	}
}

// both applies a check to the controller's and the webhook's pod template at path.
func both(path, want string) func(*testing.T, rendered) string {
	return func(t *testing.T, r rendered) string {
		return wants("Deployment", "karpenter", "spec.template."+path, want)(t, r) +
			wants("Deployment", "karpenter-webhook", "spec.template."+path, want)(t, r)
	}
}

func controllerEnv(name, want string) func(*testing.T, rendered) string {
	return func(t *testing.T, r rendered) string {
		if got := envOf(container(t, r.get(t, "Deployment", "karpenter"), "controller"), name); got != want {
			return fmt.Sprintf("controller %s=%q, want %q", name, got, want)
		}
		return ""
	}
}

func all(checks ...func(*testing.T, rendered) string) func(*testing.T, rendered) string {
	return func(t *testing.T, r rendered) string {
		var problems []string
		for _, check := range checks {
			if problem := check(t, r); problem != "" {
				problems = append(problems, problem)
			}
		}
		return strings.Join(problems, "\n")
	}
}

// upstreamValueCases covers every value of upstream's values.yaml, by its path.
var upstreamValueCases = map[string]valueCase{
	"nameOverride":          {args: set("nameOverride=kp"), check: wants("Deployment", "karpenter-kp", "spec.selector.matchLabels", "app.kubernetes.io/name: kp")},
	"fullnameOverride":      {args: set("fullnameOverride=kp"), check: all(wants("Deployment", "kp", "spec.template.spec.serviceAccountName", "kp"), wants("Service", "kp", "spec.ports.0.name", "http-metrics"), wants("ClusterRoleBinding", "karpenter-controller", "subjects", "name: kp"))},
	"additionalLabels":      {args: set("additionalLabels.team=platform"), check: all(wants("Deployment", "karpenter", "metadata.labels", "team: platform"), wants("Service", "karpenter", "metadata.labels", "team: platform"), wants("Deployment", "karpenter-webhook", "metadata.labels", "team: platform"))},
	"additionalAnnotations": {args: set("additionalAnnotations.owner=platform"), check: all(wants("Deployment", "karpenter", "metadata.annotations", "owner: platform"), wants("ServiceAccount", "karpenter", "metadata.annotations", "owner: platform"))},
	"imagePullPolicy":       {args: set("imagePullPolicy=Always"), check: all(both("spec.containers.0.imagePullPolicy", "Always"))},
	"imagePullSecrets":      {args: setJSON(`imagePullSecrets=[{"name":"regcred"}]`), check: both("spec.imagePullSecrets", "name: regcred")},
	"service.annotations":   {args: set("service.annotations.owner=platform"), check: wants("Service", "karpenter", "metadata.annotations", "owner: platform")},
	"serviceAccount.create": {args: set("serviceAccount.create=false", "serviceAccount.name=existing"), check: func(t *testing.T, r rendered) string {
		if r.find("ServiceAccount", "existing") != nil || r.find("ServiceAccount", "karpenter") != nil {
			return "serviceAccount.create=false still creates the controller's ServiceAccount"
		}
		return all(wants("Deployment", "karpenter", "spec.template.spec.serviceAccountName", "existing"), wants("RoleBinding", "karpenter-leader-election", "subjects", "name: existing"))(t, r)
	}},
	"serviceAccount.name":                    {args: set("serviceAccount.name=kp-controller"), check: all(wants("ServiceAccount", "kp-controller", "kind", "ServiceAccount"), wants("Deployment", "karpenter", "spec.template.spec.serviceAccountName", "kp-controller"), wants("ClusterRoleBinding", "karpenter-controller", "subjects", "name: kp-controller"))},
	"serviceAccount.annotations":             {args: set(`serviceAccount.annotations.eks\.amazonaws\.com/role-arn=arn:aws:iam::111122223333:role/K`), check: wants("ServiceAccount", "karpenter", "metadata.annotations", "role/K")},
	"additionalClusterRoleRules":             {args: setJSON(`additionalClusterRoleRules=[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get"]}]`), check: all(wants("ClusterRole", "karpenter-additional", "rules", "configmaps"), wants("ClusterRoleBinding", "karpenter-additional", "subjects", "name: karpenter"))},
	"serviceMonitor.enabled":                 {args: set("serviceMonitor.enabled=true"), check: wants("ServiceMonitor", "karpenter", "spec.endpoints.0.port", "http-metrics")},
	"serviceMonitor.additionalLabels":        {args: set("serviceMonitor.enabled=true", "serviceMonitor.additionalLabels.release=prom"), check: wants("ServiceMonitor", "karpenter", "metadata.labels", "release: prom")},
	"serviceMonitor.relabelings":             {args: append(set("serviceMonitor.enabled=true"), setJSON(`serviceMonitor.relabelings=[{"action":"labeldrop","regex":"pod"}]`)...), check: wants("ServiceMonitor", "karpenter", "spec.endpoints.0.relabelings", "labeldrop")},
	"serviceMonitor.metricRelabelings":       {args: append(set("serviceMonitor.enabled=true"), setJSON(`serviceMonitor.metricRelabelings=[{"action":"labeldrop","regex":"le"}]`)...), check: wants("ServiceMonitor", "karpenter", "spec.endpoints.0.metricRelabelings", "labeldrop")},
	"serviceMonitor.endpointConfig":          {args: append(set("serviceMonitor.enabled=true"), setJSON(`serviceMonitor.endpointConfig={"interval":"30s"}`)...), check: wants("ServiceMonitor", "karpenter", "spec.endpoints.0.interval", "30s")},
	"serviceMonitor.sampleLimit":             {args: set("serviceMonitor.enabled=true", "serviceMonitor.sampleLimit=5000"), check: wants("ServiceMonitor", "karpenter", "spec.sampleLimit", "5000")},
	"replicas":                               {args: set("replicas=3"), check: wants("Deployment", "karpenter", "spec.replicas", "3")},
	"revisionHistoryLimit":                   {args: set("revisionHistoryLimit=7"), check: wants("Deployment", "karpenter", "spec.revisionHistoryLimit", "7")},
	"strategy.rollingUpdate.maxUnavailable":  {args: set("strategy.rollingUpdate.maxUnavailable=0", "strategy.rollingUpdate.maxSurge=1"), check: wants("Deployment", "karpenter", "spec.strategy", "maxSurge: 1\n  maxUnavailable: 0")},
	"podLabels":                              {args: set("podLabels.team=platform"), check: both("metadata.labels", "team: platform")},
	"podAnnotations":                         {args: set("podAnnotations.owner=platform"), check: both("metadata.annotations", "owner: platform")},
	"podDisruptionBudget.name":               {args: set("podDisruptionBudget.name=kp-pdb"), check: wants("PodDisruptionBudget", "kp-pdb", "spec.selector.matchLabels", "app.kubernetes.io/name: karpenter")},
	"podDisruptionBudget.maxUnavailable":     {args: set("podDisruptionBudget.maxUnavailable=0"), check: wants("PodDisruptionBudget", "karpenter", "spec.maxUnavailable", "0")},
	"podSecurityContext.fsGroup":             {args: set("podSecurityContext.fsGroup=2000"), check: both("spec.securityContext.fsGroup", "2000")},
	"podSecurityContext.seccompProfile.type": {args: set("podSecurityContext.seccompProfile.type=Localhost", "podSecurityContext.seccompProfile.localhostProfile=k.json"), check: both("spec.securityContext.seccompProfile", "type: Localhost")},
	"priorityClassName":                      {args: set("priorityClassName=platform"), check: both("spec.priorityClassName", "platform")},
	"terminationGracePeriodSeconds":          {args: set("terminationGracePeriodSeconds=60"), check: wants("Deployment", "karpenter", "spec.template.spec.terminationGracePeriodSeconds", "60")},
	"hostNetwork":                            {args: set("hostNetwork=true"), check: wants("Deployment", "karpenter", "spec.template.spec.hostNetwork", "true")},
	"schedulerName":                          {args: set("schedulerName=other"), check: both("spec.schedulerName", "other")},
	"dnsPolicy":                              {args: set("dnsPolicy=Default"), check: both("spec.dnsPolicy", "Default")},
	"dnsConfig":                              {args: setJSON(`dnsConfig={"options":[{"name":"ndots","value":"1"}]}`), check: both("spec.dnsConfig", "ndots")},
	"initContainers":                         {args: setJSON(`initContainers=[{"name":"wait","image":"registry.example/wait"}]`), check: wants("Deployment", "karpenter", "spec.template.spec.initContainers", "name: wait")},
	"nodeSelector.kubernetes.io/os":          {args: set(`nodeSelector.role=system`), check: both("spec.nodeSelector", "kubernetes.io/os: linux\nrole: system")},
	"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms": {args: setJSON(`affinity={"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"role","operator":"In","values":["system"]}]}]}}}`), check: both("spec.affinity.nodeAffinity", "key: role")},
	"affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution": {check: all(
		wants("Deployment", "karpenter", "spec.template.spec.affinity.podAntiAffinity", "app.kubernetes.io/name: karpenter\n"),
		wants("Deployment", "karpenter-webhook", "spec.template.spec.affinity.podAntiAffinity", "app.kubernetes.io/name: karpenter-webhook"))},
	"topologySpreadConstraints": {args: setJSON(`topologySpreadConstraints=[{"maxSkew":2,"topologyKey":"rack","whenUnsatisfiable":"ScheduleAnyway"}]`), check: all(
		wants("Deployment", "karpenter", "spec.template.spec.topologySpreadConstraints", "app.kubernetes.io/name: karpenter\n"),
		wants("Deployment", "karpenter-webhook", "spec.template.spec.topologySpreadConstraints", "app.kubernetes.io/name: karpenter-webhook"),
		both("spec.topologySpreadConstraints", "topologyKey: rack"))},
	"tolerations":                                   {args: setJSON(`tolerations=[{"key":"dedicated","operator":"Exists"}]`), check: both("spec.tolerations", "key: dedicated")},
	"extraVolumes":                                  {args: setJSON(`extraVolumes=[{"name":"token","emptyDir":{}}]`, `controller.extraVolumeMounts=[{"name":"token","mountPath":"/var/run/token"}]`), check: all(wants("Deployment", "karpenter", "spec.template.spec.volumes", "name: token"), wants("Deployment", "karpenter", "spec.template.spec.containers.0.volumeMounts", "/var/run/token"))},
	"controller.containerName":                      {args: set("controller.containerName=karpenter-controller"), check: wants("Deployment", "karpenter", "spec.template.spec.containers.0.name", "karpenter-controller")},
	"controller.image.repository":                   {args: set("controller.image.repository=registry.example/other"), check: both("spec.containers.0.image", "registry.example/other:v0.0.0-test@sha256:")},
	"controller.image.tag":                          {args: set("controller.image.tag=v1.2.3"), check: both("spec.containers.0.image", ":v1.2.3@")},
	"controller.image.digest":                       {args: set("controller.image.digest=sha256:" + strings.Repeat("1", 64)), check: both("spec.containers.0.image", "@sha256:1111")},
	"controller.env":                                {args: setJSON(`controller.env=[{"name":"AWS_REGION","value":"eu-west-1"}]`), check: controllerEnv("AWS_REGION", "eu-west-1")},
	"controller.envFrom":                            {args: setJSON(`controller.envFrom=[{"configMapRef":{"name":"settings"}}]`), check: wants("Deployment", "karpenter", "spec.template.spec.containers.0.envFrom", "name: settings")},
	"controller.securityContext.appArmorProfile":    {args: setJSON(`controller.securityContext.appArmorProfile={"type":"RuntimeDefault"}`), check: wants("Deployment", "karpenter", "spec.template.spec.containers.0.securityContext.appArmorProfile", "RuntimeDefault")},
	"controller.securityContext.seLinuxOptions":     {args: setJSON(`controller.securityContext.seLinuxOptions={"level":"s0:c1"}`), check: wants("Deployment", "karpenter", "spec.template.spec.containers.0.securityContext.seLinuxOptions", "s0:c1")},
	"controller.securityContext.seccompProfile":     {args: setJSON(`controller.securityContext.seccompProfile={"type":"RuntimeDefault"}`), check: wants("Deployment", "karpenter", "spec.template.spec.containers.0.securityContext.seccompProfile", "RuntimeDefault")},
	"controller.resources":                          {args: set("controller.resources.limits.memory=3Gi"), check: wants("Deployment", "karpenter", "spec.template.spec.containers.0.resources.limits.memory", "3Gi")},
	"controller.extraVolumeMounts":                  {args: setJSON(`extraVolumes=[{"name":"t","emptyDir":{}}]`, `controller.extraVolumeMounts=[{"name":"t","mountPath":"/t"}]`), check: wants("Deployment", "karpenter", "spec.template.spec.containers.0.volumeMounts", "mountPath: /t")},
	"controller.sidecarContainer":                   {args: setJSON(`controller.sidecarContainer=[{"name":"proxy","image":"registry.example/proxy"}]`), check: wants("Deployment", "karpenter", "spec.template.spec.containers.1.name", "proxy")},
	"controller.sidecarVolumeMounts":                {args: setJSON(`extraVolumes=[{"name":"s","emptyDir":{}}]`, `controller.sidecarContainer=[{"name":"proxy","image":"registry.example/proxy"}]`, `controller.sidecarVolumeMounts=[{"name":"s","mountPath":"/s"}]`), check: wants("Deployment", "karpenter", "spec.template.spec.containers.1.volumeMounts", "mountPath: /s")},
	"controller.metrics.port":                       {args: set("controller.metrics.port=9080"), check: all(controllerEnv("METRICS_BIND_ADDRESS", ":9080"), wants("Deployment", "karpenter", "spec.template.spec.containers.0.ports", "containerPort: 9080\n  name: http-metrics"), wants("Service", "karpenter", "spec.ports.0.port", "9080"))},
	"controller.healthProbe.port":                   {args: set("controller.healthProbe.port=9081"), check: all(controllerEnv("HEALTH_PROBE_BIND_ADDRESS", ":9081"), wants("Deployment", "karpenter", "spec.template.spec.containers.0.ports", "containerPort: 9081"))},
	"logLevel":                                      {args: set("logLevel=debug"), check: all(controllerEnv("LOG_LEVEL", "debug"), wants("Deployment", "karpenter-webhook", "spec.template.spec.containers.0.env", "name: LOG_LEVEL\n  value: debug"))},
	"logOutputPaths":                                {args: setJSON(`logOutputPaths=["stdout","/var/log/karpenter.log"]`), check: controllerEnv("LOG_OUTPUT_PATHS", "stdout,/var/log/karpenter.log")},
	"logErrorOutputPaths":                           {args: setJSON(`logErrorOutputPaths=["stderr","/var/log/karpenter.err"]`), check: controllerEnv("LOG_ERROR_OUTPUT_PATHS", "stderr,/var/log/karpenter.err")},
	"settings.batchMaxDuration":                     {args: set("settings.batchMaxDuration=20s"), check: controllerEnv("BATCH_MAX_DURATION", "20s")},
	"settings.batchIdleDuration":                    {args: set("settings.batchIdleDuration=2s"), check: controllerEnv("BATCH_IDLE_DURATION", "2s")},
	"settings.preferencePolicy":                     {args: set("settings.preferencePolicy=Ignore"), warning: "settings.preferencePolicy"},
	"settings.minValuesPolicy":                      {args: set("settings.minValuesPolicy=BestEffort"), check: controllerEnv("MIN_VALUES_POLICY", "BestEffort")},
	"settings.clusterCABundle":                      {args: set("settings.clusterCABundle=Q0E="), check: controllerEnv("CLUSTER_CA_BUNDLE", "Q0E=")},
	"settings.clusterName":                          {args: set("settings.clusterName=prod"), check: controllerEnv("CLUSTER_NAME", "prod")},
	"settings.clusterEndpoint":                      {args: set("settings.clusterEndpoint=https://example.eks.amazonaws.com"), check: controllerEnv("CLUSTER_ENDPOINT", "https://example.eks.amazonaws.com")},
	"settings.isolatedVPC":                          {args: set("settings.isolatedVPC=true"), check: controllerEnv("ISOLATED_VPC", "true")},
	"settings.eksControlPlane":                      {args: set("settings.eksControlPlane=true"), warning: "settings.eksControlPlane"},
	"settings.vmMemoryOverheadPercent":              {args: set("settings.vmMemoryOverheadPercent=0.1"), check: controllerEnv("VM_MEMORY_OVERHEAD_PERCENT", "0.1")},
	"settings.interruptionQueue":                    {args: set("settings.interruptionQueue=prod-interruptions"), check: controllerEnv("INTERRUPTION_QUEUE", "prod-interruptions")},
	"settings.enableZonalShift":                     {args: set("settings.enableZonalShift=true"), warning: "settings.enableZonalShift"},
	"settings.reservedENIs":                         {args: set("settings.reservedENIs=1"), check: controllerEnv("RESERVED_ENIS", "1")},
	"settings.ignoreDRARequests":                    {args: set("settings.ignoreDRARequests=false"), warning: "settings.ignoreDRARequests"},
	"settings.disableClusterStateObservability":     {args: set("settings.disableClusterStateObservability=true"), warning: "settings.disableClusterStateObservability"},
	"settings.disableDryRun":                        {args: set("settings.disableDryRun=true"), warning: "settings.disableDryRun"},
	"settings.amiRefreshInterval":                   {args: set("settings.amiRefreshInterval=5m"), warning: "settings.amiRefreshInterval"},
	"settings.subnetRefreshInterval":                {args: set("settings.subnetRefreshInterval=5m"), warning: "settings.subnetRefreshInterval"},
	"settings.featureGates.nodeRepair":              {args: set("settings.featureGates.nodeRepair=true"), warning: "settings.featureGates.nodeRepair"},
	"settings.featureGates.nodeOverlay":             {args: set("settings.featureGates.nodeOverlay=true"), check: controllerEnv("FEATURE_GATES", "NodeOverlay=true")},
	"settings.featureGates.reservedCapacity":        {args: set("settings.featureGates.reservedCapacity=true"), warning: "settings.featureGates.reservedCapacity"},
	"settings.featureGates.spotToSpotConsolidation": {args: set("settings.featureGates.spotToSpotConsolidation=false"), check: controllerEnv("FEATURE_GATES", "SpotToSpotConsolidation=false")},
	"settings.featureGates.staticCapacity":          {args: set("settings.featureGates.staticCapacity=true"), warning: "settings.featureGates.staticCapacity"},
	"settings.featureGates.capacityBuffer":          {args: set("settings.featureGates.capacityBuffer=true"), warning: "settings.featureGates.capacityBuffer"},
	"settings.awsFeatureGates.nodeClassCEL":         {args: set("settings.awsFeatureGates.nodeClassCEL=true"), warning: "settings.awsFeatureGates.nodeClassCEL"},
}

// leafPaths are the dotted paths of a values file's leaves: scalars, lists and empty maps.
func leafPaths(prefix string, value any) []string {
	object, ok := value.(map[string]any)
	if !ok || len(object) == 0 {
		return []string{prefix}
	}
	var paths []string
	for key, field := range object {
		path := key
		if prefix != "" {
			path = prefix + "." + key
		}
		paths = append(paths, leafPaths(path, field)...)
	}
	return paths
}

// TestEveryUpstreamValueTakesEffectOrWarns renders each value of upstream's values.yaml set to
// something other than its default and checks its effect, or, for the values this project has
// no feature for, the release notes' warning naming it. A value of upstream's file that the
// table does not cover fails the test.
func TestEveryUpstreamValueTakesEffectOrWarns(t *testing.T) {
	t.Parallel()
	var values map[string]any
	if err := yaml.Unmarshal(readFile(t, upstreamValues), &values); err != nil {
		t.Fatal(err)
	}
	paths := leafPaths("", values)
	sort.Strings(paths)
	for _, path := range paths {
		if _, ok := upstreamValueCases[path]; !ok {
			t.Errorf("upstream's value %s is in no case of upstreamValueCases", path)
		}
	}
	env := environment.New(t, environment.Options{})
	quiet := helmInstall(t, env, true, ourImage...)
	if strings.Contains(quiet.notes, "WARNING") {
		t.Errorf("the default install's notes warn:\n%s", quiet.notes)
	}
	for _, path := range paths {
		c, ok := upstreamValueCases[path]
		if !ok {
			continue
		}
		t.Run(path, func(t *testing.T) {
			args := append(slices.Clone(ourImage), c.args...)
			if c.warning != "" {
				release := helmInstall(t, env, true, args...)
				if !strings.Contains(release.notes, "WARNING") || !strings.Contains(release.notes, c.warning) {
					t.Errorf("the notes do not warn about %s:\n%s", c.warning, release.notes)
				}
				return
			}
			if problem := c.check(t, helmTemplateArgs(t, args...)); problem != "" {
				t.Error(problem)
			}
		})
	}
}

// TestChartRefusesAMissingImage: the source chart names no image; rendering it without one
// fails with a message saying what to set.
func TestChartRefusesAMissingImage(t *testing.T) {
	t.Parallel()
	_, err := helm("template", "karpenter", chart, "--namespace", namespace)
	if err == nil || !strings.Contains(err.Error(), "controller.image.repository") {
		t.Errorf("the chart renders without an image (%v); want an error naming controller.image.repository", err)
	}
	if _, err := os.Stat(chart); err != nil {
		t.Fatal(err)
	}
}
