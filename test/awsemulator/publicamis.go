package awsemulator

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// The public AMIs Amazon publishes for EKS nodes, and the SSM parameters that name them, as
// EC2NodeClass aliases (family@version) read them: per Kubernetes minor version, architecture
// and variant, a parameter per release and one for the newest (recommended, or latest).
//
// amazonOwnerID is the account the emulator's Amazon AMIs belong to; their owner alias is
// "amazon", which is what selectors and DescribeImages' Owners name.
const amazonOwnerID = "602401143452"

// amiRelease is one release of a family's AMIs.
type amiRelease struct {
	version string
	date    time.Time
}

func day(year int, month time.Month, d int) time.Time {
	return time.Date(year, month, d, 0, 0, 0, 0, time.UTC)
}

// The Kubernetes minor versions each family publishes AMIs for, as AWS: Amazon Linux 2023 and
// Bottlerocket for all, Amazon Linux 2 only up to 1.32, Windows Server 2025 from 1.35.
var (
	al2023AMIVersions       = []string{"1.30", "1.31", "1.32", "1.33", "1.34", "1.35"}
	al2AMIVersions          = []string{"1.30", "1.31", "1.32"}
	bottlerocketAMIVersions = al2023AMIVersions
	windowsAMIVersions      = map[string][]string{"2019": al2023AMIVersions, "2022": al2023AMIVersions, "2025": {"1.35"}}
)

// The releases the emulator publishes, oldest first: the last is the one recommended (latest).
// Windows publishes only its latest AMIs.
var (
	eksAMIReleases          = []amiRelease{{"v20260415", day(2026, 4, 15)}, {"v20260520", day(2026, 5, 20)}}
	bottlerocketAMIReleases = []amiRelease{{"1.57.0", day(2026, 4, 9)}, {"1.58.0", day(2026, 5, 12)}}
	windowsAMIRelease       = amiRelease{"2026.05.14", day(2026, 5, 14)}
)

// publicAMIDeprecationYears is how long after its creation EC2 deprecates a public AMI by
// default.
const publicAMIDeprecationYears = 2

// publicAMIs returns the region's public EKS node AMIs by id and the SSM parameters naming them.
func publicAMIs(region string) (map[string]*image, map[string]string) {
	p := amiPublisher{region: region, images: map[string]*image{}, parameters: map[string]string{}}
	p.amazonLinux2023()
	p.amazonLinux2()
	p.bottlerocket()
	p.windows()
	return p.images, p.parameters
}

type amiPublisher struct {
	region     string
	images     map[string]*image
	parameters map[string]string
}

// publish adds an Amazon AMI and the parameters that name it; its id is derived from the
// region and name, so it is the same in every run.
func (p *amiPublisher) publish(name, architecture, platform, description string, created time.Time, parameters ...string) {
	sum := sha256.Sum256([]byte(p.region + "/" + name))
	img := &image{
		id: "ami-" + hex.EncodeToString(sum[:])[:17], name: name, description: description,
		ownerID: amazonOwnerID, ownerAlias: "amazon", public: true, architecture: architecture, platform: platform,
		created: created, deprecation: created.AddDate(publicAMIDeprecationYears, 0, 0), state: imageStateAvailable,
	}
	p.images[img.id] = img
	for _, parameter := range parameters {
		p.parameters[parameter] = img.id
	}
}

// forEachRelease publishes each release, adding the newest's parameter to latest.
func forEachRelease(releases []amiRelease, latest string, publish func(r amiRelease, extra ...string)) {
	for i, r := range releases {
		if i == len(releases)-1 {
			publish(r, latest)
			continue
		}
		publish(r)
	}
}

func (p *amiPublisher) amazonLinux2023() {
	variants := []struct{ arch, variant string }{
		{"x86_64", "standard"}, {"x86_64", "nvidia"}, {"x86_64", "neuron"}, {"arm64", "standard"}, {"arm64", "nvidia"},
	}
	for _, k8s := range al2023AMIVersions {
		for _, v := range variants {
			dir := fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/", k8s, v.arch, v.variant)
			forEachRelease(eksAMIReleases, dir+"recommended/image_id", func(r amiRelease, extra ...string) {
				name := fmt.Sprintf("amazon-eks-node-al2023-%s-%s-%s-%s", v.arch, v.variant, k8s, r.version)
				description := fmt.Sprintf("EKS-optimized Kubernetes node based on Amazon Linux 2023, (k8s: %s, variant: %s)", k8s, v.variant)
				p.publish(name, v.arch, "", description, r.date, append(extra, dir+name+"/image_id")...)
			})
		}
	}
}

func (p *amiPublisher) amazonLinux2() {
	variants := []struct{ dir, prefix, arch string }{
		{"amazon-linux-2", "amazon-eks-node", "x86_64"},
		{"amazon-linux-2-arm64", "amazon-eks-arm64-node", "arm64"},
		{"amazon-linux-2-gpu", "amazon-eks-gpu-node", "x86_64"},
	}
	for _, k8s := range al2AMIVersions {
		for _, v := range variants {
			dir := fmt.Sprintf("/aws/service/eks/optimized-ami/%s/%s/", k8s, v.dir)
			forEachRelease(eksAMIReleases, dir+"recommended/image_id", func(r amiRelease, extra ...string) {
				name := fmt.Sprintf("%s-%s-%s", v.prefix, k8s, r.version)
				description := fmt.Sprintf("EKS Kubernetes Worker AMI with AmazonLinux2 image, (k8s: %s)", k8s)
				p.publish(name, v.arch, "", description, r.date, append(extra, dir+name+"/image_id")...)
			})
		}
	}
}

func (p *amiPublisher) bottlerocket() {
	for _, k8s := range bottlerocketAMIVersions {
		for _, flavor := range []string{"aws-k8s-" + k8s, "aws-k8s-" + k8s + "-nvidia"} {
			for _, arch := range []string{"x86_64", "arm64"} {
				dir := fmt.Sprintf("/aws/service/bottlerocket/%s/%s/", flavor, arch)
				forEachRelease(bottlerocketAMIReleases, dir+"latest/image_id", func(r amiRelease, extra ...string) {
					// Bottlerocket names end with the release's commit.
					commit := sha256.Sum256([]byte(r.version))
					name := fmt.Sprintf("bottlerocket-%s-%s-v%s-%s", flavor, arch, r.version, hex.EncodeToString(commit[:])[:8])
					description := fmt.Sprintf("bottlerocket-%s-%s-v%s", flavor, arch, r.version)
					p.publish(name, arch, "", description, r.date, append(extra, dir+r.version+"/image_id")...)
				})
			}
		}
	}
}

func (p *amiPublisher) windows() {
	for _, year := range sortedKeys(windowsAMIVersions) {
		for _, k8s := range windowsAMIVersions[year] {
			base := fmt.Sprintf("Windows_Server-%s-English-Core-EKS_Optimized-%s", year, k8s)
			description := fmt.Sprintf("Microsoft Windows Server %s Core optimized for EKS and Kubernetes %s", year, k8s)
			p.publish(base+"-"+windowsAMIRelease.version, "x86_64", imagePlatformWindows, description, windowsAMIRelease.date,
				"/aws/service/ami-windows-latest/"+base+"/image_id")
		}
	}
}
