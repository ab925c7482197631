package amifamily

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"karpenter.sh/karpenter/pkg/providers/awsapi"
	"karpenter.sh/karpenter/pkg/providers/selector"
)

// A selection of AMIs by terms is kept for a minute: an AMI the user makes or tags is seen soon.
const selectionTTL = time.Minute

var fields = selector.Fields{Kind: "AMIs", ID: "image-id", Name: "name"}

// nameOwners own the AMIs a term by name may select: the account and Amazon. Anyone can give a
// public AMI any name, so a name alone must not choose what nodes boot.
var nameOwners = []string{"self", "amazon"}

// AMI is an image nodes may boot.
type AMI struct {
	ID, Name string
	// Architecture is the GOARCH of the nodes it boots (amd64, arm64), "" for an architecture
	// Karpenter launches no nodes of.
	Architecture string
	// CreationDate is when it was made, as EC2 gives it: ISO 8601, which sorts as time does.
	CreationDate string
	// Variant is, for an alias's AMI, VariantNVIDIA or VariantNeuron for one with the drivers of
	// GPUs or accelerators, VariantStandard otherwise and for AMIs selected by terms.
	Variant string
}

// selectionKey keys a selection in the cache, apart from the recommended AMIs' parameters.
type selectionKey string

// List returns the AMIs any of the terms selects (by tags, id, or name with EC2's * and ?
// wildcards, among the term's owner's or else the account's and Amazon's), newest first, then by id. Selecting none is
// not an error, the caller says what it means, and is not kept.
func (p *Provider) List(ctx context.Context, terms []selector.Term) ([]AMI, error) {
	key := selector.Key(terms)
	if cached, ok := p.cache.Get(selectionKey(key)); ok {
		return cached.([]AMI), nil
	}
	c, err := p.clients()
	if err != nil {
		return nil, err
	}
	byID := map[string]AMI{}
	for _, term := range terms {
		filters, err := term.Filters(fields)
		if err != nil {
			return nil, err
		}
		input := &ec2.DescribeImagesInput{Filters: filters}
		switch {
		case term.Owner != "":
			input.Owners = []string{term.Owner}
		case term.Name != "" && term.ID == "":
			input.Owners = nameOwners
		}
		pages := ec2.NewDescribeImagesPaginator(c.EC2, input)
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				return nil, awsapi.CallError(err, "ec2:DescribeImages", "AMIs selected by "+key)
			}
			for _, image := range page.Images {
				id := sdkaws.ToString(image.ImageId)
				byID[id] = AMI{ID: id, Name: sdkaws.ToString(image.Name), Architecture: nodeArchitecture(string(image.Architecture)), CreationDate: sdkaws.ToString(image.CreationDate)}
			}
		}
	}
	if len(byID) == 0 {
		return nil, nil
	}
	amis := slices.SortedFunc(maps.Values(byID), func(a, b AMI) int {
		return cmp.Or(strings.Compare(b.CreationDate, a.CreationDate), strings.Compare(a.ID, b.ID))
	})
	p.cache.Add(selectionKey(key), amis, selectionTTL)
	return amis, nil
}

// nodeArchitecture is the GOARCH of EC2's architecture name, "" for one nodes do not run.
func nodeArchitecture(ec2Architecture string) string {
	for goarch, name := range amiArchitectures {
		if name == ec2Architecture {
			return goarch
		}
	}
	return ""
}
