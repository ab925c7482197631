package awsemulator

import (
	"errors"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// Bottlerocket keeps the kubelet's and container runtime's state on its data volume, which its
// AMIs map at /dev/xvdb with 20 GiB; its root volume holds only the OS.
const (
	bottlerocketDataDevice    = "/dev/xvdb"
	bottlerocketDataVolumeGiB = 20
)

// kubeReservedEphemeralStorage is the ephemeral storage the EKS-optimized AMIs reserve for the
// kubelet and container runtime (kube-reserved), in bytes.
const kubeReservedEphemeralStorage = 1 << 30

// ephemeralStorage is the size of the filesystem the kubelet of an instance of the type keeps
// its state on, booted from the image with the template's data, which the kubelet reports as
// its ephemeral-storage capacity: with user data that makes one RAID-0 array of the NVMe
// instance-store disks, on a type that has them, their total size in GB (10^9 bytes, as EC2
// counts it); otherwise the volume the state lives on — Bottlerocket's data volume, else the
// image's root volume — at the size the template maps it, else the image's.
//
// nil, no ephemeral storage reported, for a template that maps no volume, as a Provisioner's:
// its instance types report no ephemeral storage, so its nodes report none either and the plan
// and the node agree. (A real kubelet would report the image's root volume. An EC2NodeClass's
// templates map volumes, but for a Custom class that names none.)
func (e *Emulator) ephemeralStorage(instanceType string, img *image, data LaunchTemplateData) *resource.Quantity {
	if len(data.BlockDeviceMappings) == 0 {
		return nil
	}
	boot := readBootStorage(data.DecodedUserData)
	if store := e.catalogue.Types[instanceType].InstanceStorage; boot.instanceStoreRAID0 && store != nil && store.NVMe {
		return resource.NewScaledQuantity(store.TotalSizeInGB(), resource.Giga)
	}
	device, sizeGiB := img.rootDeviceName(), img.rootVolumeGiB()
	if boot.bottlerocket {
		device, sizeGiB = bottlerocketDataDevice, bottlerocketDataVolumeGiB
	}
	for _, m := range data.BlockDeviceMappings {
		if m.DeviceName == device && m.EBS != nil && m.EBS.VolumeSize != nil {
			sizeGiB = *m.EBS.VolumeSize
			break
		}
	}
	return resource.NewQuantity(int64(sizeGiB)<<30, resource.BinarySI)
}

// allocatableEphemeralStorage is what the kubelet leaves pods of that ephemeral storage, as the
// EKS-optimized AMIs configure it: less kube-reserved (1Gi) and the hard eviction threshold
// nodefs.available<10%, never below zero. Like the CPU and memory it reserves, it takes no
// kubelet settings from the user data: a class's kubeReserved, systemReserved or evictionHard
// change the plan, not the emulated node.
func allocatableEphemeralStorage(capacity resource.Quantity) *resource.Quantity {
	bytes := capacity.Value()
	return resource.NewQuantity(max(0, bytes-kubeReservedEphemeralStorage-bytes/10), resource.BinarySI)
}

// bootStorage is where an instance's user data has the kubelet keep its state.
type bootStorage struct {
	// bottlerocket: the user data is Bottlerocket's settings, so the state is on its data volume.
	bottlerocket bool
	// instanceStoreRAID0: the user data makes one RAID-0 array of the NVMe instance-store disks
	// and keeps the state on it.
	instanceStoreRAID0 bool
}

// readBootStorage reads user data as the EKS AMIs' boot agents do: a MIME multi-part document
// is Amazon Linux's (nodeadm's NodeConfigs, bootstrap.sh in shell scripts), TOML with settings
// is Bottlerocket's. Anything else keeps the state on the root volume.
func readBootStorage(userData string) bootStorage {
	// A malformed part ends what is read of a MIME document, as it ends cloud-init's reading.
	if parts, err := UserDataParts(userData); !errors.Is(err, errNotMultipart) {
		return bootStorage{instanceStoreRAID0: amazonLinuxRAID0(parts)}
	}
	var config bottlerocketConfig
	if _, err := toml.Decode(userData, &config); err == nil && config.Settings != nil {
		return bootStorage{bottlerocket: true, instanceStoreRAID0: config.Settings.instanceStoreRAID0()}
	}
	return bootStorage{}
}

// nodeadmLocalStorage is the part of nodeadm's NodeConfig that says what to do with the
// instance-store disks.
type nodeadmLocalStorage struct {
	Spec struct {
		Instance struct {
			LocalStorage struct {
				Strategy string `json:"strategy"`
			} `json:"localStorage"`
		} `json:"instance"`
	} `json:"spec"`
}

// amazonLinuxRAID0 says the parts make one RAID-0 array of the NVMe instance-store disks and
// keep the kubelet's state on it: on AL2023 nodeadm's localStorage strategy RAID0 (nodeadm
// merges the NodeConfigs in order, so the last that sets a strategy decides), on AL2 a script
// running bootstrap.sh with --local-disks raid0.
func amazonLinuxRAID0(parts []UserDataPart) bool {
	strategy, bootstrapRAID0 := "", false
	for _, part := range parts {
		switch part.MediaType {
		case NodeadmMediaType:
			var config nodeadmLocalStorage
			if yaml.Unmarshal([]byte(part.Body), &config) == nil && config.Spec.Instance.LocalStorage.Strategy != "" {
				strategy = config.Spec.Instance.LocalStorage.Strategy
			}
		case shellScriptMediaType:
			bootstrapRAID0 = bootstrapRAID0 || runsBootstrapWithRAID0(part.Body)
		}
	}
	return strategy == "RAID0" || bootstrapRAID0
}

// runsBootstrapWithRAID0 says a shell script runs the AL2 AMI's /etc/eks/bootstrap.sh with
// --local-disks raid0, as words of their own (as Karpenter writes them).
func runsBootstrapWithRAID0(script string) bool {
	for line := range strings.Lines(script) {
		words := strings.Fields(line)
		bootstrap := slices.Index(words, "/etc/eks/bootstrap.sh")
		if bootstrap < 0 {
			continue
		}
		for i := bootstrap + 1; i+1 < len(words); i++ {
			if words[i] == "--local-disks" && words[i+1] == "raid0" {
				return true
			}
		}
	}
	return false
}

// bottlerocketConfig is the part of Bottlerocket's user data that says where the kubelet keeps
// its state.
type bottlerocketConfig struct {
	Settings *bottlerocketSettings `toml:"settings"`
}

type bottlerocketSettings struct {
	BootstrapCommands map[string]bottlerocketBootstrapCommand `toml:"bootstrap-commands"`
}

type bottlerocketBootstrapCommand struct {
	Commands [][]string `toml:"commands"`
	Mode     string     `toml:"mode"`
}

// instanceStoreRAID0 says the bootstrap commands that run make one RAID-0 array of the NVMe
// instance-store disks (apiclient ephemeral-storage init) and bind the kubelet's and container
// runtime's directories onto it (apiclient ephemeral-storage bind): without the bind the state
// stays on the data volume.
func (s *bottlerocketSettings) instanceStoreRAID0() bool {
	var run [][]string
	for _, c := range s.BootstrapCommands {
		if c.Mode != "off" {
			run = append(run, c.Commands...)
		}
	}
	runs := func(subcommand string) bool {
		return slices.ContainsFunc(run, func(command []string) bool {
			return slices.Equal(command[:min(3, len(command))], []string{"apiclient", "ephemeral-storage", subcommand})
		})
	}
	return runs("init") && runs("bind")
}
