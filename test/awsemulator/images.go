package awsemulator

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// image is an AMI: one of Amazon's public node AMIs (publicamis.go), one of the account's own,
// or one another account shares with it (Seed.Images).
type image struct {
	id, name, description string
	ownerID               string
	// ownerAlias is amazon, aws-marketplace or aws-backup-vault for the AMIs of Amazon and its
	// verified providers; empty otherwise.
	ownerAlias   string
	public       bool
	architecture string // x86_64, arm64, …
	platform     string // windows, or empty for Linux/UNIX
	created      time.Time
	deprecation  time.Time // zero when never deprecated
	state        string
	// tags are the account's tags on the image (tags are private to an account, so Amazon's
	// images have none until the account tags them).
	tags map[string]string
}

const (
	imageStateAvailable  = "available"
	imagePlatformWindows = "windows"
)

var (
	imageStates        = []string{imageStateAvailable, "pending", "invalid", "deregistered", "transient", "failed", "error", "disabled"}
	imageArchitectures = []string{"x86_64", "arm64", "i386", "x86_64_mac", "arm64_mac"}
	imageOwnerAliases  = []string{"amazon", "aws-marketplace", "aws-backup-vault"}
	imageIDPattern     = regexp.MustCompile(`^ami-([0-9a-f]{8}|[0-9a-f]{17})$`)
	accountIDPattern   = regexp.MustCompile(`^[0-9]{12}$`)
)

func (i *image) deprecated(now time.Time) bool {
	return !i.deprecation.IsZero() && !now.Before(i.deprecation)
}

func (i *image) rootDeviceName() string {
	if i.platform == imagePlatformWindows {
		return "/dev/sda1"
	}
	return "/dev/xvda"
}

// rootVolumeGiB is the size the image maps its root volume with: an instance's unless its
// launch maps the root device with another.
func (i *image) rootVolumeGiB() int32 {
	if i.platform == imagePlatformWindows {
		return 50
	}
	return 20
}

// checkImage fails a launch from an AMI that is malformed, does not exist or is not available,
// as EC2 does; a deprecated AMI still launches. The caller holds e.mu.
func (e *Emulator) checkImage(id string) *apiError {
	if !imageIDPattern.MatchString(id) {
		return errEC2("InvalidAMIID.Malformed", "Invalid id: \"%s\" (expecting \"ami-...\")", id)
	}
	img, ok := e.images[id]
	if !ok {
		return errEC2("InvalidAMIID.NotFound", "The image id '[%s]' does not exist", id)
	}
	if img.state != imageStateAvailable {
		return errEC2("InvalidAMIID.Unavailable", "The image id '[%s]' is not available (state %s)", id, img.state)
	}
	return nil
}

type xmlImage struct {
	ImageID            string                         `xml:"imageId"`
	ImageLocation      string                         `xml:"imageLocation"`
	ImageState         string                         `xml:"imageState"`
	ImageOwnerID       string                         `xml:"imageOwnerId"`
	ImageOwnerAlias    string                         `xml:"imageOwnerAlias,omitempty"`
	CreationDate       string                         `xml:"creationDate"`
	DeprecationTime    string                         `xml:"deprecationTime,omitempty"`
	IsPublic           bool                           `xml:"isPublic"`
	Architecture       string                         `xml:"architecture"`
	ImageType          string                         `xml:"imageType"`
	Platform           string                         `xml:"platform,omitempty"`
	PlatformDetails    string                         `xml:"platformDetails"`
	UsageOperation     string                         `xml:"usageOperation"`
	Name               string                         `xml:"name"`
	Description        string                         `xml:"description,omitempty"`
	RootDeviceType     string                         `xml:"rootDeviceType"`
	RootDeviceName     string                         `xml:"rootDeviceName"`
	BlockDeviceMapping *xmlItems[xmlImageBlockDevice] `xml:"blockDeviceMapping"`
	VirtualizationType string                         `xml:"virtualizationType"`
	Hypervisor         string                         `xml:"hypervisor"`
	EnaSupport         bool                           `xml:"enaSupport"`
	TagSet             *xmlItems[ec2Tag]              `xml:"tagSet"`
}

type xmlImageBlockDevice struct {
	DeviceName string `xml:"deviceName"`
	EBS        struct {
		DeleteOnTermination bool   `xml:"deleteOnTermination"`
		VolumeSize          int32  `xml:"volumeSize"`
		VolumeType          string `xml:"volumeType"`
		Encrypted           bool   `xml:"encrypted"`
	} `xml:"ebs"`
}

// ec2Time is how EC2 writes the times of its XML responses.
func ec2Time(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func (e *Emulator) xmlImage(i *image) xmlImage {
	x := xmlImage{
		ImageID: i.id, ImageLocation: i.ownerID + "/" + i.name, ImageState: i.state, ImageOwnerID: i.ownerID, ImageOwnerAlias: i.ownerAlias,
		CreationDate: ec2Time(i.created), IsPublic: i.public, Architecture: i.architecture, ImageType: "machine", Platform: i.platform,
		PlatformDetails: "Linux/UNIX", UsageOperation: "RunInstances", Name: i.name, Description: i.description,
		RootDeviceType: "ebs", RootDeviceName: i.rootDeviceName(), VirtualizationType: "hvm", Hypervisor: "xen", EnaSupport: true,
		TagSet: tagSet(i.tags),
	}
	if i.ownerAlias != "" {
		x.ImageLocation = i.ownerAlias + "/" + i.name
	}
	if i.platform == imagePlatformWindows {
		x.PlatformDetails, x.UsageOperation = "Windows", "RunInstances:0002"
	}
	if !i.deprecation.IsZero() {
		x.DeprecationTime = ec2Time(i.deprecation)
	}
	root := xmlImageBlockDevice{DeviceName: x.RootDeviceName}
	root.EBS.DeleteOnTermination, root.EBS.VolumeSize, root.EBS.VolumeType = true, i.rootVolumeGiB(), "gp3"
	x.BlockDeviceMapping = items([]xmlImageBlockDevice{root})
	return x
}

// imageOwnedBy reports whether an image belongs to one of DescribeImages' Owners: self, an
// owner alias, or an account id.
func (e *Emulator) imageOwnedBy(i *image, owners []string) bool {
	for _, o := range owners {
		if (o == "self" && i.ownerID == e.opts.AccountID) || o == i.ownerID || (i.ownerAlias != "" && o == i.ownerAlias) {
			return true
		}
	}
	return false
}

// describeImages lists the images the account may launch — its own, public ones and those
// shared with it — as EC2 does: deprecated images only when IncludeDeprecated is true, when
// asked for by id, or when the account owns them; disabled ones only with IncludeDisabled.
func (e *Emulator) describeImages(q ec2Query, now time.Time) (any, *apiError) {
	filters, aerr := q.filters("architecture", "creation-date", "description", "image-id", "image-type", "is-public", "name",
		"owner-alias", "owner-id", "platform", "root-device-name", "root-device-type", "state", "virtualization-type", "hypervisor")
	if aerr != nil {
		return nil, aerr
	}
	ids, owners := q.strs("ImageId"), q.strs("Owner")
	if len(ids) > 0 && q.str("MaxResults") != "" {
		return nil, errEC2("InvalidParameterCombination", "The parameter ImageIds cannot be used with the parameter MaxResults")
	}
	for _, o := range owners {
		if o != "self" && !slices.Contains(imageOwnerAliases, o) && !accountIDPattern.MatchString(o) {
			return nil, errEC2("InvalidUserID.Malformed", "Invalid user id: \"%s\"", o)
		}
	}
	var missing []string
	for _, id := range ids {
		if !imageIDPattern.MatchString(id) {
			return nil, errEC2("InvalidAMIID.Malformed", "Invalid id: \"%s\" (expecting \"ami-...\")", id)
		}
		if _, ok := e.images[id]; !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return nil, errEC2("InvalidAMIID.NotFound", "The image id '[%s]' does not exist", strings.Join(missing, ", "))
	}
	includeDeprecated, includeDisabled := q.str("IncludeDeprecated") == "true", q.str("IncludeDisabled") == "true"

	var out []xmlImage
	for _, id := range sortedKeys(e.images) {
		i := e.images[id]
		switch {
		case len(ids) > 0 && !slices.Contains(ids, id):
			continue
		case len(owners) > 0 && !e.imageOwnedBy(i, owners):
			continue
		case len(ids) == 0 && i.deprecated(now) && !includeDeprecated && i.ownerID != e.opts.AccountID:
			continue
		case i.state == "disabled" && !includeDisabled:
			continue
		}
		x := e.xmlImage(i)
		if !matchFilters(filters, i.tags, func(f string) []string {
			return []string{map[string]string{
				"architecture": x.Architecture, "creation-date": x.CreationDate, "description": x.Description, "image-id": x.ImageID,
				"image-type": x.ImageType, "is-public": strconv.FormatBool(x.IsPublic), "name": x.Name, "owner-alias": x.ImageOwnerAlias,
				"owner-id": x.ImageOwnerID, "platform": x.Platform, "root-device-name": x.RootDeviceName, "root-device-type": x.RootDeviceType,
				"state": x.ImageState, "virtualization-type": x.VirtualizationType, "hypervisor": x.Hypervisor,
			}[f]}
		}) {
			continue
		}
		out = append(out, x)
	}
	out, next, aerr := page(q, out, func(x xmlImage) string { return x.ImageID }, 5, 1000, 0)
	if aerr != nil {
		return nil, aerr
	}
	return struct {
		ImagesSet *xmlItems[xmlImage] `xml:"imagesSet"`
		NextToken string              `xml:"nextToken,omitempty"`
	}{ImagesSet: items(out), NextToken: next}, nil
}

// SeedImage is an AMI the account owns or another account shares with it, written as its id
// alone (the account's own x86_64 Linux image, available, named by its id) or in full.
type SeedImage struct {
	ID          string `json:"id"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	// OwnerID defaults to the emulator's account; another account's image is shared with it.
	OwnerID string `json:"ownerId,omitempty"`
	// OwnerAlias is amazon, aws-marketplace or aws-backup-vault, for another owner's public image.
	OwnerAlias string `json:"ownerAlias,omitempty"`
	Public     bool   `json:"public,omitempty"`
	// Architecture defaults to x86_64.
	Architecture string `json:"architecture,omitempty"`
	// Platform is windows, or empty for Linux/UNIX.
	Platform string `json:"platform,omitempty"`
	// CreationDate defaults to when the emulator started.
	CreationDate *time.Time `json:"creationDate,omitempty"`
	// DeprecationTime is when EC2 deprecates the image; never when empty.
	DeprecationTime *time.Time `json:"deprecationTime,omitempty"`
	// State defaults to available.
	State string            `json:"state,omitempty"`
	Tags  map[string]string `json:"tags,omitempty"`
}

// UnmarshalJSON reads an image's id alone or the whole image, refusing unknown fields as the
// rest of the seed does.
func (i *SeedImage) UnmarshalJSON(b []byte) error {
	type plain SeedImage
	return unmarshalNameOrStrict(b, &i.ID, (*plain)(i))
}

func (e *Emulator) validateSeedImages(s Seed) error {
	seen := map[string]bool{}
	for _, i := range s.Images {
		switch {
		case !imageIDPattern.MatchString(i.ID):
			return fmt.Errorf("images: %q is not an AMI id (ami- and 8 or 17 hex digits)", i.ID)
		case e.images[i.ID] != nil || seen[i.ID]:
			return fmt.Errorf("image %q already exists", i.ID)
		case i.OwnerID != "" && !accountIDPattern.MatchString(i.OwnerID):
			return fmt.Errorf("image %q: ownerId %q is not a 12-digit account id", i.ID, i.OwnerID)
		case i.OwnerAlias != "" && !slices.Contains(imageOwnerAliases, i.OwnerAlias):
			return fmt.Errorf("image %q: ownerAlias %q is not one of %v", i.ID, i.OwnerAlias, imageOwnerAliases)
		case i.OwnerAlias != "" && orDefault(i.OwnerID, e.opts.AccountID) == e.opts.AccountID:
			return fmt.Errorf("image %q: only another account's image has an ownerAlias", i.ID)
		case i.Architecture != "" && !slices.Contains(imageArchitectures, i.Architecture):
			return fmt.Errorf("image %q: architecture %q is not one of %v", i.ID, i.Architecture, imageArchitectures)
		case i.Platform != "" && i.Platform != imagePlatformWindows:
			return fmt.Errorf("image %q: platform %q is not windows (empty is Linux/UNIX)", i.ID, i.Platform)
		case i.State != "" && !slices.Contains(imageStates, i.State):
			return fmt.Errorf("image %q: state %q is not one of %v", i.ID, i.State, imageStates)
		}
		seen[i.ID] = true
	}
	return nil
}

// seedImages adds the seed's images; the caller holds e.mu and has validated the seed.
func (e *Emulator) seedImages(s Seed, now time.Time) {
	for _, si := range s.Images {
		img := &image{
			id: si.ID, name: orDefault(si.Name, si.ID), description: si.Description, ownerID: orDefault(si.OwnerID, e.opts.AccountID),
			ownerAlias: si.OwnerAlias, public: si.Public, architecture: orDefault(si.Architecture, "x86_64"), platform: si.Platform,
			created: now, state: orDefault(si.State, imageStateAvailable), tags: maps.Clone(si.Tags),
		}
		if si.CreationDate != nil {
			img.created = si.CreationDate.UTC()
		}
		if si.DeprecationTime != nil {
			img.deprecation = si.DeprecationTime.UTC()
		}
		e.images[img.id] = img
	}
	// A seeded SSM parameter naming an AMI the emulator does not know publishes that AMI: the
	// public parameters' are Amazon's, others the account's own.
	for _, name := range sortedKeys(s.SSMParameters) {
		id := s.SSMParameters[name]
		if !imageIDPattern.MatchString(id) || e.images[id] != nil {
			continue
		}
		img := &image{id: id, name: id, ownerID: e.opts.AccountID, architecture: "x86_64", created: now, state: imageStateAvailable}
		if strings.HasPrefix(name, "/aws/service/") {
			img.ownerID, img.ownerAlias, img.public = amazonOwnerID, "amazon", true
		}
		e.images[id] = img
	}
}
