package amifamily

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"mime/multipart"
	"net/mail"
	"net/textproto"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
)

// shellScriptContentType marks a user data part cloud-init runs as a script.
const shellScriptContentType = `text/x-shellscript; charset="us-ascii"`

// UnsupportedFamilyError says an EC2NodeClass's AMI family has no user data Karpenter renders.
type UnsupportedFamilyError struct{ Family string }

func (e *UnsupportedFamilyError) Error() string {
	return fmt.Sprintf("Karpenter renders no user data for AMI family %q (AL2023, AL2, Bottlerocket and Custom only)", e.Family)
}

// ClassUserData is the user data of an EC2NodeClass's nodes in its AMI family's format, with the
// class's own spec.userData merged in: for AL2023 and AL2 a MIME multi-part document of the
// user's parts first and Karpenter's last (nodeadm merges NodeConfigs in order, so Karpenter's
// join settings win), for Bottlerocket the user's TOML with Karpenter's settings over it, for
// Custom the user's as given.
func ClassUserData(family string, in NodeBootstrap, userData string) (string, error) {
	switch family {
	case awsv1.AMIFamilyAL2023:
		return al2023UserData(in, userData)
	case awsv1.AMIFamilyAL2:
		return al2UserData(in, userData)
	case awsv1.AMIFamilyBottlerocket:
		return bottlerocketUserData(in, userData)
	case awsv1.AMIFamilyCustom:
		return userData, nil
	}
	return "", &UnsupportedFamilyError{Family: family}
}

// Rendered is nil for a family ClassUserData renders, *UnsupportedFamilyError otherwise, so
// that a class of another family is told before anything is planned for it.
func Rendered(family string) error {
	switch family {
	case awsv1.AMIFamilyAL2023, awsv1.AMIFamilyAL2, awsv1.AMIFamilyBottlerocket, awsv1.AMIFamilyCustom:
		return nil
	}
	return &UnsupportedFamilyError{Family: family}
}

func al2023UserData(in NodeBootstrap, userData string) (string, error) {
	parts, err := userParts(userData)
	if err != nil {
		return "", err
	}
	raw, err := nodeadmConfig(in)
	if err != nil {
		return "", err
	}
	return mimeDocument(append(parts, mimePart{header: textproto.MIMEHeader{"Content-Type": {nodeadmContentType}}, body: raw}))
}

// userParts are the parts of the user's user data: those of a MIME multi-part document, headers
// kept, or else the whole of it as one part, a NodeConfig or a shell script.
func userParts(userData string) ([]mimePart, error) {
	if strings.TrimSpace(userData) == "" {
		return nil, nil
	}
	if msg, err := mail.ReadMessage(strings.NewReader(userData)); err == nil {
		if mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type")); err == nil && strings.HasPrefix(mediaType, "multipart/") {
			return readParts(msg.Body, params["boundary"])
		}
	}
	contentType := shellScriptContentType
	if isNodeConfig(userData) {
		contentType = nodeadmContentType
	}
	return []mimePart{{header: textproto.MIMEHeader{"Content-Type": {contentType}}, body: []byte(userData)}}, nil
}

func readParts(body io.Reader, boundary string) ([]mimePart, error) {
	reader := multipart.NewReader(body, boundary)
	var parts []mimePart
	for {
		part, err := reader.NextRawPart()
		if errors.Is(err, io.EOF) {
			return parts, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the MIME parts of spec.userData, %w", err)
		}
		raw, err := io.ReadAll(part)
		if err != nil {
			return nil, fmt.Errorf("reading the MIME parts of spec.userData, %w", err)
		}
		parts = append(parts, mimePart{header: part.Header, body: raw})
	}
}

// isNodeConfig says the user data is a nodeadm NodeConfig in YAML.
func isNodeConfig(userData string) bool {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	return yaml.Unmarshal([]byte(userData), &head) == nil && strings.HasPrefix(head.APIVersion, "node.eks.aws/") && head.Kind == "NodeConfig"
}

// al2UserData runs the AL2 AMI's bootstrap.sh after the user's parts, the kubelet settings as
// its flags, and with RAID0 its --local-disks raid0.
func al2UserData(in NodeBootstrap, userData string) (string, error) {
	parts, err := userParts(userData)
	if err != nil {
		return "", err
	}
	args := []string{
		"/etc/eks/bootstrap.sh", shellQuote(in.ClusterName),
		"--apiserver-endpoint", shellQuote(in.ClusterEndpoint),
		"--b64-cluster-ca", shellQuote(base64.StdEncoding.EncodeToString(in.ClusterCABundle)),
		// Karpenter's max-pods figure, not the script's own table, so the node matches the plan.
		"--use-max-pods", "false",
	}
	if in.Kubelet != nil && len(in.Kubelet.ClusterDNS) > 0 {
		args = append(args, "--dns-cluster-ip", shellQuote(in.Kubelet.ClusterDNS[0]))
	}
	flags := append(kubeletFlags(in.Labels, in.Taints), fmt.Sprintf("--max-pods=%d", in.MaxPods))
	flags = append(flags, kubeletConfigFlags(in.Kubelet)...)
	args = append(args, "--kubelet-extra-args", shellQuote(strings.Join(flags, " ")))
	if in.InstanceStorePolicy.RAID0() {
		// bootstrap.sh's setup-local-disks makes the array and binds the kubelet's and
		// containerd's state onto it before the kubelet starts.
		args = append(args, "--local-disks", "raid0")
	}
	script := "#!/bin/bash -xe\nexec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n" + strings.Join(args, " ") + "\n"
	return mimeDocument(append(parts, mimePart{header: textproto.MIMEHeader{"Content-Type": {shellScriptContentType}}, body: []byte(script)}))
}

// kubeletConfigFlags are the class's kubelet settings as the kubelet's flags, for bootstrap.sh.
func kubeletConfigFlags(kubelet *awsv1.KubeletConfiguration) []string {
	if kubelet == nil {
		return nil
	}
	var flags []string
	for flag, values := range map[string]map[string]string{
		"--system-reserved": kubelet.SystemReserved, "--kube-reserved": kubelet.KubeReserved,
	} {
		if len(values) > 0 {
			flags = append(flags, flag+"="+joinPairs(values, "="))
		}
	}
	for flag, values := range map[string]map[string]string{
		"--eviction-hard": kubelet.EvictionHard, "--eviction-soft": kubelet.EvictionSoft,
	} {
		if len(values) > 0 {
			flags = append(flags, flag+"="+joinPairs(values, "<"))
		}
	}
	if periods := softGracePeriods(kubelet); periods != nil {
		flags = append(flags, "--eviction-soft-grace-period="+joinPairs(periods, "="))
	}
	for flag, value := range map[string]*int32{
		"--pods-per-core": kubelet.PodsPerCore, "--eviction-max-pod-grace-period": kubelet.EvictionMaxPodGracePeriod,
		"--image-gc-high-threshold": kubelet.ImageGCHighThresholdPercent, "--image-gc-low-threshold": kubelet.ImageGCLowThresholdPercent,
	} {
		if value != nil {
			flags = append(flags, fmt.Sprintf("%s=%d", flag, *value))
		}
	}
	if kubelet.CPUCFSQuota != nil {
		flags = append(flags, "--cpu-cfs-quota="+strconv.FormatBool(*kubelet.CPUCFSQuota))
	}
	// Sorted, as the maps above are iterated in any order: equal inputs share a template.
	slices.Sort(flags)
	return flags
}

// softGracePeriods are evictionSoftGracePeriod's durations as the kubelet reads them (1m30s),
// nil when it sets none.
func softGracePeriods(kubelet *awsv1.KubeletConfiguration) map[string]string {
	if len(kubelet.EvictionSoftGracePeriod) == 0 {
		return nil
	}
	periods := map[string]string{}
	for signal, d := range kubelet.EvictionSoftGracePeriod {
		periods[signal] = d.Duration.String()
	}
	return periods
}

// joinPairs joins a map's pairs sorted by key: k1<sep>v1,k2<sep>v2.
func joinPairs(values map[string]string, sep string) string {
	var pairs []string
	for _, key := range slices.Sorted(maps.Keys(values)) {
		pairs = append(pairs, key+sep+values[key])
	}
	return strings.Join(pairs, ",")
}

// shellQuote quotes a word for bash.
func shellQuote(word string) string {
	return "'" + strings.ReplaceAll(word, "'", `'\''`) + "'"
}

// bottlerocketUserData is the user's TOML with Karpenter's settings.kubernetes over it: the
// cluster, max-pods and the kubelet settings replace the user's, the labels and taints are
// added to the user's; with RAID0, a bootstrap command puts the ephemeral storage on the
// instance-store disks.
func bottlerocketUserData(in NodeBootstrap, userData string) (string, error) {
	config := map[string]any{}
	if _, err := toml.Decode(userData, &config); err != nil {
		return "", fmt.Errorf("decoding spec.userData as Bottlerocket TOML, %w", err)
	}
	settings, err := table(config, "settings")
	if err != nil {
		return "", err
	}
	kubernetes, err := table(settings, "kubernetes")
	if err != nil {
		return "", err
	}
	kubernetes["cluster-name"] = in.ClusterName
	kubernetes["api-server"] = in.ClusterEndpoint
	kubernetes["cluster-certificate"] = base64.StdEncoding.EncodeToString(in.ClusterCABundle)
	kubernetes["max-pods"] = in.MaxPods
	labels, err := table(kubernetes, "node-labels")
	if err != nil {
		return "", err
	}
	for key, value := range in.Labels {
		labels[key] = value
	}
	taints, err := table(kubernetes, "node-taints")
	if err != nil {
		return "", err
	}
	if err := addTaints(taints, withUnregistered(in.Taints)); err != nil {
		return "", err
	}
	bottlerocketKubelet(kubernetes, in.Kubelet)
	if in.InstanceStorePolicy.RAID0() {
		if err := bottlerocketInstanceStorage(settings, in.AMIName); err != nil {
			return "", err
		}
	}
	var out bytes.Buffer
	if err := toml.NewEncoder(&out).Encode(config); err != nil {
		return "", fmt.Errorf("encoding the Bottlerocket settings, %w", err)
	}
	return out.String(), nil
}

// table is the TOML table under key, made when absent.
func table(parent map[string]any, key string) (map[string]any, error) {
	value, ok := parent[key]
	if !ok {
		child := map[string]any{}
		parent[key] = child
		return child, nil
	}
	child, ok := value.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("spec.userData's %s is a %T, not a TOML table", key, value)
	}
	return child, nil
}

// addTaints adds the taints to Bottlerocket's node-taints, key = ["value:Effect", ...].
func addTaints(table map[string]any, taints []corev1.Taint) error {
	for _, t := range taints {
		var values []string
		switch existing := table[t.Key].(type) {
		case nil:
		case []any:
			for _, v := range existing {
				s, ok := v.(string)
				if !ok {
					return fmt.Errorf("spec.userData's node-taints %q holds %v, not strings", t.Key, v)
				}
				values = append(values, s)
			}
		default:
			return fmt.Errorf("spec.userData's node-taints %q is a %T, not a list", t.Key, existing)
		}
		if value := t.Value + ":" + string(t.Effect); !slices.Contains(values, value) {
			values = append(values, value)
		}
		table[t.Key] = values
	}
	return nil
}

// bottlerocketKubelet sets the class's kubelet settings under their Bottlerocket names.
func bottlerocketKubelet(kubernetes map[string]any, kubelet *awsv1.KubeletConfiguration) {
	if kubelet == nil {
		return
	}
	switch len(kubelet.ClusterDNS) {
	case 0:
	case 1:
		kubernetes["cluster-dns-ip"] = kubelet.ClusterDNS[0]
	default:
		kubernetes["cluster-dns-ip"] = kubelet.ClusterDNS
	}
	for key, values := range map[string]map[string]string{
		"system-reserved": kubelet.SystemReserved, "kube-reserved": kubelet.KubeReserved,
		"eviction-hard": kubelet.EvictionHard, "eviction-soft": kubelet.EvictionSoft,
	} {
		if len(values) > 0 {
			kubernetes[key] = values
		}
	}
	if periods := softGracePeriods(kubelet); periods != nil {
		kubernetes["eviction-soft-grace-period"] = periods
	}
	for key, value := range map[string]*int32{
		"pods-per-core": kubelet.PodsPerCore, "eviction-max-pod-grace-period": kubelet.EvictionMaxPodGracePeriod,
		"image-gc-high-threshold-percent": kubelet.ImageGCHighThresholdPercent, "image-gc-low-threshold-percent": kubelet.ImageGCLowThresholdPercent,
	} {
		if value != nil {
			kubernetes[key] = *value
		}
	}
	if kubelet.CPUCFSQuota != nil {
		kubernetes["cpu-cfs-quota-enforced"] = *kubelet.CPUCFSQuota
	}
}

// bottlerocketInstanceStorageCommand names the bootstrap command that puts a Bottlerocket node's
// ephemeral storage on its instance-store disks; a user's command of that name is replaced.
const bottlerocketInstanceStorageCommand = "000-mount-instance-storage"

// bottlerocketInstanceStorage adds the bootstrap command that makes one RAID-0 array of the
// instance-store NVMe disks (apiclient ephemeral-storage init) and binds the kubelet's and
// container runtime's directories onto it, at every boot and before the kubelet starts; the
// node fails to boot rather than run with its ephemeral storage on the data volume, which the
// scheduler did not count on. A release that binds its own default directories (1.46.0 on)
// is left to choose them, as it knows which it has; an older one, or an AMI whose name tells
// no release, is given the directories every release with ephemeral-storage (1.22.0 on)
// accepts.
func bottlerocketInstanceStorage(settings map[string]any, amiName string) error {
	commands, err := table(settings, "bootstrap-commands")
	if err != nil {
		return err
	}
	bind := []string{"apiclient", "ephemeral-storage", "bind"}
	if !bottlerocketBindsDefaultDirectories(amiName) {
		bind = append(bind, "--dirs", "/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods")
	}
	commands[bottlerocketInstanceStorageCommand] = map[string]any{
		"commands":  [][]string{{"apiclient", "ephemeral-storage", "init"}, bind},
		"mode":      "always",
		"essential": true,
	}
	return nil
}

// bottlerocketRelease finds the release in a Bottlerocket AMI's name
// (bottlerocket-aws-k8s-1.34-x86_64-v1.58.0-0123abcd: 1.58).
var bottlerocketRelease = regexp.MustCompile(`-v(\d+)\.(\d+)\.\d+(-|$)`)

// bottlerocketBindsDefaultDirectories says the AMI's release binds its default directories when
// `apiclient ephemeral-storage bind` names none: 1.46.0 and later.
func bottlerocketBindsDefaultDirectories(amiName string) bool {
	m := bottlerocketRelease.FindStringSubmatch(amiName)
	if m == nil {
		return false
	}
	major, majorErr := strconv.Atoi(m[1])
	minor, minorErr := strconv.Atoi(m[2])
	if majorErr != nil || minorErr != nil {
		return false
	}
	return major > 1 || (major == 1 && minor >= 46)
}

// aliasFamilies are the AMI families of the aliases' family names.
var aliasFamilies = map[string]string{
	"al2023": awsv1.AMIFamilyAL2023, "al2": awsv1.AMIFamilyAL2, "bottlerocket": awsv1.AMIFamilyBottlerocket,
	"windows2019": awsv1.AMIFamilyWindows2019, "windows2022": awsv1.AMIFamilyWindows2022, "windows2025": awsv1.AMIFamilyWindows2025,
}

// Family is the AMI family of a class's nodes: spec.amiFamily, else its alias's family; "" when
// it has neither (the schema refuses that).
func Family(class *awsv1.EC2NodeClass) string {
	if class.Spec.AMIFamily != nil {
		return *class.Spec.AMIFamily
	}
	for _, term := range class.Spec.AMISelectorTerms {
		if name, _, ok := strings.Cut(term.Alias, "@"); ok {
			return aliasFamilies[strings.ToLower(name)]
		}
	}
	return ""
}
