package amifamily_test

import (
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	"karpenter.sh/karpenter/pkg/providers/amifamily"
)

func classBootstrap() amifamily.NodeBootstrap {
	return amifamily.NodeBootstrap{
		ClusterName: "demo", ClusterEndpoint: "https://demo.example", ClusterCABundle: []byte("CA"), ServiceCIDR: "10.100.0.0/16",
		Labels:  map[string]string{"team": "ml", "karpenter.sh/nodepool": "default"},
		Taints:  []corev1.Taint{{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}},
		MaxPods: 42,
		Kubelet: &awsv1.KubeletConfiguration{
			ClusterDNS: []string{"10.100.0.10"}, PodsPerCore: ptr.To[int32](4),
			SystemReserved: map[string]string{"cpu": "100m"}, KubeReserved: map[string]string{"memory": "1Gi"},
			EvictionHard: map[string]string{"memory.available": "5%"}, EvictionSoft: map[string]string{"memory.available": "10%"},
			EvictionSoftGracePeriod:   map[string]metav1.Duration{"memory.available": {Duration: 90 * time.Second}},
			EvictionMaxPodGracePeriod: ptr.To[int32](60), ImageGCHighThresholdPercent: ptr.To[int32](85), ImageGCLowThresholdPercent: ptr.To[int32](80),
			CPUCFSQuota: ptr.To(false),
		},
	}
}

// part is one part of a MIME user data document.
type part struct{ contentType, body string }

func mimeParts(t *testing.T, document string) []part {
	t.Helper()
	msg, err := mail.ReadMessage(strings.NewReader(document))
	if err != nil {
		t.Fatalf("not a MIME document, %v:\n%s", err, document)
	}
	_, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	var parts []part
	reader := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := reader.NextPart()
		if errors.Is(err, io.EOF) {
			return parts
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(p)
		parts = append(parts, part{p.Header.Get("Content-Type"), string(body)})
	}
}

const userNodeConfig = `apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  kubelet:
    config:
      shutdownGracePeriod: 30s
`

const userMIME = "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"BOUNDARY\"\r\n\r\n" +
	"--BOUNDARY\r\nContent-Type: text/x-shellscript\r\n\r\necho hello\r\n" +
	"--BOUNDARY\r\nContent-Type: application/node.eks.aws\r\n\r\n" + userNodeConfig + "\r\n--BOUNDARY--\r\n"

// AL2023 user data is the user's parts first, then Karpenter's NodeConfig with the class's
// kubelet settings, labels and taints.
func TestAL2023ClassUserDataMergesTheUsersParts(t *testing.T) {
	for _, tt := range []struct {
		name, userData string
		want           []string
	}{
		{"none", "", []string{"application/node.eks.aws"}},
		{"a script", "#!/bin/bash\necho hello\n", []string{`text/x-shellscript; charset="us-ascii"`, "application/node.eks.aws"}},
		{"a NodeConfig", userNodeConfig, []string{"application/node.eks.aws", "application/node.eks.aws"}},
		{"a MIME document", userMIME, []string{"text/x-shellscript", "application/node.eks.aws", "application/node.eks.aws"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data, err := amifamily.ClassUserData(awsv1.AMIFamilyAL2023, classBootstrap(), tt.userData)
			if err != nil {
				t.Fatal(err)
			}
			parts := mimeParts(t, data)
			var types []string
			for _, p := range parts {
				types = append(types, p.contentType)
			}
			if diff := cmp.Diff(tt.want, types); diff != "" {
				t.Fatalf("parts (-want +got):\n%s\n%s", diff, data)
			}
			if len(parts) > 1 && !strings.Contains(parts[0].body, "hello") && !strings.Contains(parts[0].body, "shutdownGracePeriod") {
				t.Errorf("the user's part is not first:\n%s", data)
			}
			karpenters := parts[len(parts)-1].body
			for _, want := range []string{
				"name: demo", "maxPods: 42", "podsPerCore: 4", "clusterDNS:\n      - 10.100.0.10", "cpu: 100m", "memory: 1Gi",
				"memory.available: 5%", "memory.available: 10%", "memory.available: 1m30s", "evictionMaxPodGracePeriod: 60",
				"imageGCHighThresholdPercent: 85", "imageGCLowThresholdPercent: 80", "cpuCFSQuota: false",
				"--node-labels=karpenter.sh/nodepool=default,team=ml", "--register-with-taints=gpu=true:NoSchedule,karpenter.sh/unregistered:NoExecute",
			} {
				if !strings.Contains(karpenters, want) {
					t.Errorf("Karpenter's NodeConfig lacks %q:\n%s", want, karpenters)
				}
			}
		})
	}
}

func TestBottlerocketClassUserDataMergesTheUsersTOML(t *testing.T) {
	user := `[settings.kubernetes]
cluster-name = "wrong"
[settings.kubernetes.node-labels]
team = "web"
owner = "me"
[settings.kubernetes.node-taints]
gpu = ["false:NoExecute"]
[settings.host-containers.admin]
enabled = true
`
	data, err := amifamily.ClassUserData(awsv1.AMIFamilyBottlerocket, classBootstrap(), user)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if _, err := toml.Decode(data, &got); err != nil {
		t.Fatalf("not TOML, %v:\n%s", err, data)
	}
	want := map[string]any{"settings": map[string]any{
		"host-containers": map[string]any{"admin": map[string]any{"enabled": true}},
		"kubernetes": map[string]any{
			"cluster-name": "demo", "api-server": "https://demo.example", "cluster-certificate": "Q0E=", "max-pods": int64(42),
			"node-labels":    map[string]any{"team": "ml", "owner": "me", "karpenter.sh/nodepool": "default"},
			"node-taints":    map[string]any{"gpu": []any{"false:NoExecute", "true:NoSchedule"}, "karpenter.sh/unregistered": []any{":NoExecute"}},
			"cluster-dns-ip": "10.100.0.10", "pods-per-core": int64(4),
			"system-reserved": map[string]any{"cpu": "100m"}, "kube-reserved": map[string]any{"memory": "1Gi"},
			"eviction-hard": map[string]any{"memory.available": "5%"}, "eviction-soft": map[string]any{"memory.available": "10%"},
			"eviction-soft-grace-period": map[string]any{"memory.available": "1m30s"}, "eviction-max-pod-grace-period": int64(60),
			"image-gc-high-threshold-percent": int64(85), "image-gc-low-threshold-percent": int64(80), "cpu-cfs-quota-enforced": false,
		},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("settings (-want +got):\n%s", diff)
	}
	if _, err := amifamily.ClassUserData(awsv1.AMIFamilyBottlerocket, classBootstrap(), "settings = 1"); err == nil {
		t.Error("a settings key that is no table was accepted")
	}
}

func TestAL2ClassUserDataRunsBootstrap(t *testing.T) {
	data, err := amifamily.ClassUserData(awsv1.AMIFamilyAL2, classBootstrap(), "#!/bin/bash\necho hello\n")
	if err != nil {
		t.Fatal(err)
	}
	parts := mimeParts(t, data)
	if len(parts) != 2 || !strings.Contains(parts[0].body, "echo hello") {
		t.Fatalf("parts = %+v, want the user's script, then Karpenter's", parts)
	}
	for _, want := range []string{
		"/etc/eks/bootstrap.sh 'demo' --apiserver-endpoint 'https://demo.example' --b64-cluster-ca 'Q0E=' --use-max-pods false --dns-cluster-ip '10.100.0.10'",
		"--node-labels=karpenter.sh/nodepool=default,team=ml", "--register-with-taints=gpu=true:NoSchedule,karpenter.sh/unregistered:NoExecute",
		"--max-pods=42", "--cpu-cfs-quota=false", "--eviction-hard=memory.available<5%", "--eviction-soft-grace-period=memory.available=1m30s",
		"--image-gc-high-threshold=85", "--kube-reserved=memory=1Gi", "--pods-per-core=4", "--system-reserved=cpu=100m",
	} {
		if !strings.Contains(parts[1].body, want) {
			t.Errorf("bootstrap script lacks %q:\n%s", want, parts[1].body)
		}
	}
}

func TestCustomClassUserDataIsAsGiven(t *testing.T) {
	const user = "#!/bin/bash\n/my/bootstrap\n"
	if data, err := amifamily.ClassUserData(awsv1.AMIFamilyCustom, classBootstrap(), user); err != nil || data != user {
		t.Errorf("ClassUserData = %q, %v; want the user's as given", data, err)
	}
	var unsupported *amifamily.UnsupportedFamilyError
	if _, err := amifamily.ClassUserData(awsv1.AMIFamilyWindows2022, classBootstrap(), ""); !errors.As(err, &unsupported) {
		t.Errorf("Windows user data = %v, want UnsupportedFamilyError", err)
	}
}

// Equal inputs render equal bytes, or every launch would make a new template.
func TestClassUserDataIsStable(t *testing.T) {
	for _, family := range []string{awsv1.AMIFamilyAL2023, awsv1.AMIFamilyAL2, awsv1.AMIFamilyBottlerocket} {
		first, err := amifamily.ClassUserData(family, classBootstrap(), "")
		if err != nil {
			t.Fatal(err)
		}
		for range 10 {
			if again, _ := amifamily.ClassUserData(family, classBootstrap(), ""); again != first {
				t.Fatalf("%s user data differs between renders:\n%s\n%s", family, first, again)
			}
		}
	}
}

// With spec.instanceStorePolicy RAID0 each family's user data makes one array of the
// instance-store disks for the node's ephemeral storage; without it, nothing of it is rendered.
func TestClassUserDataRAID0(t *testing.T) {
	const (
		bottlerocketCurrent = "bottlerocket-aws-k8s-1.34-x86_64-v1.58.0-0123abcd"
		bottlerocketOld     = "bottlerocket-aws-k8s-1.30-x86_64-v1.45.2-0123abcd"
	)
	initStorage := []any{"apiclient", "ephemeral-storage", "init"}
	bindDefaults := []any{"apiclient", "ephemeral-storage", "bind"}
	bindDirectories := []any{"apiclient", "ephemeral-storage", "bind", "--dirs", "/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods"}
	bottlerocketCommand := func(bind []any) map[string]any {
		return map[string]any{"000-mount-instance-storage": map[string]any{"commands": []any{initStorage, bind}, "mode": "always", "essential": true}}
	}
	// bottlerocketCommands are the bootstrap commands of Bottlerocket user data, nil for none.
	bottlerocketCommands := func(t *testing.T, data string) map[string]any {
		t.Helper()
		var config struct {
			Settings struct {
				BootstrapCommands map[string]any `toml:"bootstrap-commands"`
			} `toml:"settings"`
		}
		if _, err := toml.Decode(data, &config); err != nil {
			t.Fatalf("not TOML, %v:\n%s", err, data)
		}
		return config.Settings.BootstrapCommands
	}
	// karpentersPart is the body of the last MIME part, Karpenter's.
	karpentersPart := func(t *testing.T, data string) string {
		t.Helper()
		parts := mimeParts(t, data)
		return parts[len(parts)-1].body
	}
	for _, tt := range []struct {
		name, family, amiName, userData string
		policy                          *awsv1.InstanceStorePolicy
		check                           func(t *testing.T, data string)
	}{
		{name: "AL2023: nodeadm's localStorage strategy", family: awsv1.AMIFamilyAL2023, policy: ptr.To(awsv1.InstanceStorePolicyRAID0),
			check: func(t *testing.T, data string) {
				if want := "instance:\n    localStorage:\n      strategy: RAID0\n"; !strings.Contains(karpentersPart(t, data), want) {
					t.Errorf("NodeConfig lacks %q:\n%s", want, data)
				}
			}},
		{name: "AL2023 without a policy", family: awsv1.AMIFamilyAL2023,
			check: func(t *testing.T, data string) {
				if strings.Contains(data, "localStorage") || strings.Contains(data, "instance:") {
					t.Errorf("NodeConfig sets the instance up unasked:\n%s", data)
				}
			}},
		{name: "AL2: bootstrap.sh's --local-disks raid0", family: awsv1.AMIFamilyAL2, policy: ptr.To(awsv1.InstanceStorePolicyRAID0),
			check: func(t *testing.T, data string) {
				if script := karpentersPart(t, data); !strings.Contains(script, " --local-disks raid0\n") || !strings.HasPrefix(script, "#!/bin/bash") {
					t.Errorf("bootstrap script lacks --local-disks raid0:\n%s", script)
				}
			}},
		{name: "AL2 without a policy", family: awsv1.AMIFamilyAL2,
			check: func(t *testing.T, data string) {
				if strings.Contains(data, "--local-disks") {
					t.Errorf("bootstrap script sets local disks up unasked:\n%s", data)
				}
			}},
		{name: "Bottlerocket 1.46 on binds its default directories", family: awsv1.AMIFamilyBottlerocket, amiName: bottlerocketCurrent, policy: ptr.To(awsv1.InstanceStorePolicyRAID0),
			check: func(t *testing.T, data string) {
				if diff := cmp.Diff(bottlerocketCommand(bindDefaults), bottlerocketCommands(t, data)); diff != "" {
					t.Errorf("bootstrap commands (-want +got):\n%s", diff)
				}
			}},
		{name: "Bottlerocket before 1.46 is given the directories", family: awsv1.AMIFamilyBottlerocket, amiName: bottlerocketOld, policy: ptr.To(awsv1.InstanceStorePolicyRAID0),
			check: func(t *testing.T, data string) {
				if diff := cmp.Diff(bottlerocketCommand(bindDirectories), bottlerocketCommands(t, data)); diff != "" {
					t.Errorf("bootstrap commands (-want +got):\n%s", diff)
				}
			}},
		{name: "Bottlerocket of an unknown release is given the directories", family: awsv1.AMIFamilyBottlerocket, amiName: "my-bottlerocket", policy: ptr.To(awsv1.InstanceStorePolicyRAID0),
			check: func(t *testing.T, data string) {
				if diff := cmp.Diff(bottlerocketCommand(bindDirectories), bottlerocketCommands(t, data)); diff != "" {
					t.Errorf("bootstrap commands (-want +got):\n%s", diff)
				}
			}},
		{name: "Bottlerocket keeps the user's bootstrap commands", family: awsv1.AMIFamilyBottlerocket, amiName: bottlerocketCurrent, policy: ptr.To(awsv1.InstanceStorePolicyRAID0),
			userData: "[settings.bootstrap-commands.tune]\ncommands = [[\"sysctl\", \"-w\", \"vm.max_map_count=262144\"]]\nmode = \"once\"\nessential = false\n",
			check: func(t *testing.T, data string) {
				want := bottlerocketCommand(bindDefaults)
				want["tune"] = map[string]any{"commands": []any{[]any{"sysctl", "-w", "vm.max_map_count=262144"}}, "mode": "once", "essential": false}
				if diff := cmp.Diff(want, bottlerocketCommands(t, data)); diff != "" {
					t.Errorf("bootstrap commands (-want +got):\n%s", diff)
				}
			}},
		{name: "Bottlerocket without a policy", family: awsv1.AMIFamilyBottlerocket, amiName: bottlerocketCurrent,
			check: func(t *testing.T, data string) {
				if commands := bottlerocketCommands(t, data); commands != nil {
					t.Errorf("bootstrap commands %v unasked", commands)
				}
			}},
		{name: "Custom: the user's user data sets the disks up", family: awsv1.AMIFamilyCustom, policy: ptr.To(awsv1.InstanceStorePolicyRAID0),
			userData: "#!/bin/bash\n/my/bootstrap --local-disks raid0\n",
			check: func(t *testing.T, data string) {
				if data != "#!/bin/bash\n/my/bootstrap --local-disks raid0\n" {
					t.Errorf("user data = %q, want the user's as given", data)
				}
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := classBootstrap()
			in.InstanceStorePolicy, in.AMIName = tt.policy, tt.amiName
			data, err := amifamily.ClassUserData(tt.family, in, tt.userData)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, data)
		})
	}
}
