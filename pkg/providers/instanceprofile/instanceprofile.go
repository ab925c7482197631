// Package instanceprofile manages the IAM instance profiles Karpenter creates for an
// EC2NodeClass's role: named after the cluster, region and class, tagged as the cluster's,
// holding the role, and deleted with the class.
package instanceprofile

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/providers/awsapi"
)

// noSuchEntity is IAM's code for a missing role or profile.
const noSuchEntity = "NoSuchEntity"

// Name is the instance profile Karpenter keeps for a class of a cluster in a region:
// <cluster>_<hash of region and class>, the same on every reconcile and every replica, so a
// profile created before a crash is found again rather than created twice.
func Name(clusterName, region, className string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(region + "/" + className))
	return fmt.Sprintf("%s_%d", clusterName, h.Sum64())
}

// Profile is what Karpenter reads of an instance profile.
type Profile struct {
	Name string
	// Role is the name of the role it holds, "" for none.
	Role string
	Tags map[string]string
}

// Provider calls IAM.
type Provider struct {
	clients awsapi.ClientsFunc
}

// NewProvider builds the provider; it does no I/O.
func NewProvider(clients awsapi.ClientsFunc) *Provider {
	return &Provider{clients: clients}
}

// Get reads an instance profile; a missing one is a cloudprovider.NotFoundError.
func (p *Provider) Get(ctx context.Context, name string) (Profile, error) {
	c, err := p.clients()
	if err != nil {
		return Profile{}, err
	}
	out, err := c.IAM.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: sdkaws.String(name)})
	if err != nil {
		return Profile{}, awsapi.CallError(err, "iam:GetInstanceProfile", "instance profile "+name, noSuchEntity)
	}
	profile := Profile{Name: name, Tags: map[string]string{}}
	if out.InstanceProfile != nil {
		if len(out.InstanceProfile.Roles) > 0 {
			profile.Role = sdkaws.ToString(out.InstanceProfile.Roles[0].RoleName)
		}
		for _, tag := range out.InstanceProfile.Tags {
			profile.Tags[sdkaws.ToString(tag.Key)] = sdkaws.ToString(tag.Value)
		}
	}
	return profile, nil
}

// Ensure makes the profile exist with the tags, holding role and no other: created when
// missing, its role replaced when it holds another. The role must exist: a missing one is a
// cloudprovider.NotFoundError naming it.
func (p *Provider) Ensure(ctx context.Context, name, role string, tags map[string]string) error {
	c, err := p.clients()
	if err != nil {
		return err
	}
	if _, err := c.IAM.GetRole(ctx, &iam.GetRoleInput{RoleName: sdkaws.String(role)}); err != nil {
		return awsapi.CallError(err, "iam:GetRole", "role "+role, noSuchEntity)
	}
	current, err := p.Get(ctx, name)
	if isNotFound(err) {
		if _, err := c.IAM.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: sdkaws.String(name), Tags: iamTags(tags)}); err != nil {
			return awsapi.CallError(err, "iam:CreateInstanceProfile", "instance profile "+name)
		}
	} else if err != nil {
		return err
	} else if !hasTags(current.Tags, tags) {
		// The class's tags changed since the profile was created. Tags removed from the class
		// stay on the profile: they may be the user's own.
		if _, err := c.IAM.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: sdkaws.String(name), Tags: iamTags(tags)}); err != nil {
			return awsapi.CallError(err, "iam:TagInstanceProfile", "instance profile "+name)
		}
	}
	if current.Role == role {
		return nil
	}
	if current.Role != "" {
		if err := p.removeRole(ctx, c, name, current.Role); err != nil {
			return err
		}
	}
	if _, err := c.IAM.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: sdkaws.String(name), RoleName: sdkaws.String(role)}); err != nil {
		return awsapi.CallError(err, "iam:AddRoleToInstanceProfile", "instance profile "+name)
	}
	return nil
}

// Delete removes the profile's role and the profile; a profile already gone is not an error.
func (p *Provider) Delete(ctx context.Context, name string) error {
	current, err := p.Get(ctx, name)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	c, err := p.clients()
	if err != nil {
		return err
	}
	if current.Role != "" {
		if err := p.removeRole(ctx, c, name, current.Role); err != nil {
			return err
		}
	}
	if _, err := c.IAM.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: sdkaws.String(name)}); err != nil {
		if awsapi.ErrorCode(err) == noSuchEntity {
			return nil
		}
		return awsapi.CallError(err, "iam:DeleteInstanceProfile", "instance profile "+name)
	}
	return nil
}

func (p *Provider) removeRole(ctx context.Context, c *awsapi.Clients, name, role string) error {
	if _, err := c.IAM.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: sdkaws.String(name), RoleName: sdkaws.String(role)}); err != nil && awsapi.ErrorCode(err) != noSuchEntity {
		return awsapi.CallError(err, "iam:RemoveRoleFromInstanceProfile", "instance profile "+name)
	}
	return nil
}

func isNotFound(err error) bool {
	var notFound *cloudprovider.NotFoundError
	return errors.As(err, &notFound)
}

// hasTags says every one of want is in have, with its value.
func hasTags(have, want map[string]string) bool {
	for k, v := range want {
		if value, ok := have[k]; !ok || value != v {
			return false
		}
	}
	return true
}

// iamTags are the tags in IAM's form, sorted by key.
func iamTags(tags map[string]string) []iamtypes.Tag {
	out := make([]iamtypes.Tag, 0, len(tags))
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		out = append(out, iamtypes.Tag{Key: sdkaws.String(k), Value: sdkaws.String(tags[k])})
	}
	return out
}
