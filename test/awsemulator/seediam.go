package awsemulator

import (
	"encoding/json"
	"fmt"
	"time"
)

// SeedIAMRole is an IAM role.
type SeedIAMRole struct {
	Name string `json:"name"`
	// Path defaults to /.
	Path        string `json:"path,omitempty"`
	Description string `json:"description,omitempty"`
	// AssumeRolePolicyDocument is the trust policy (JSON); by default EC2 may assume the role,
	// as a node role's trust policy says.
	AssumeRolePolicyDocument string            `json:"assumeRolePolicyDocument,omitempty"`
	Tags                     map[string]string `json:"tags,omitempty"`
}

// SeedInstanceProfile is an IAM instance profile, written as its name alone or in full.
type SeedInstanceProfile struct {
	Name string `json:"name"`
	// Role is the name of the role the profile holds (a role of the seed or one the emulator
	// has); none when empty.
	Role string `json:"role,omitempty"`
	// Path defaults to /.
	Path string            `json:"path,omitempty"`
	Tags map[string]string `json:"tags,omitempty"`
}

// UnmarshalJSON reads a profile's name alone or the whole profile, refusing unknown fields as
// the rest of the seed does.
func (p *SeedInstanceProfile) UnmarshalJSON(b []byte) error {
	type plain SeedInstanceProfile
	return unmarshalNameOrStrict(b, &p.Name, (*plain)(p))
}

func (e *Emulator) validateSeedIAM(s Seed) error {
	roles := map[string]bool{}
	for _, r := range s.IAMRoles {
		switch {
		case !validIAMName(r.Name):
			return fmt.Errorf("iamRoles: %q is not a valid IAM name ([\\w+=,.@-], 1 to 128 characters)", r.Name)
		case r.Path != "" && !validIAMPath(r.Path):
			return fmt.Errorf("iamRoles: role %q: path %q must start and end with /", r.Name, r.Path)
		case e.roles[iamKey(r.Name)] != nil || roles[iamKey(r.Name)]:
			return fmt.Errorf("iam role %q already exists", r.Name)
		case r.AssumeRolePolicyDocument != "" && !json.Valid([]byte(r.AssumeRolePolicyDocument)):
			return fmt.Errorf("iamRoles: role %q: assumeRolePolicyDocument is not JSON", r.Name)
		}
		roles[iamKey(r.Name)] = true
	}
	profiles := map[string]bool{}
	for _, p := range s.InstanceProfiles {
		switch {
		case !validIAMName(p.Name):
			return fmt.Errorf("instanceProfiles: %q is not a valid IAM name ([\\w+=,.@-], 1 to 128 characters)", p.Name)
		case p.Path != "" && !validIAMPath(p.Path):
			return fmt.Errorf("instanceProfiles: profile %q: path %q must start and end with /", p.Name, p.Path)
		case e.instanceProfiles[iamKey(p.Name)] != nil || profiles[iamKey(p.Name)]:
			return fmt.Errorf("instance profile %q already exists", p.Name)
		case len(p.Tags) > iamMaxTags:
			return fmt.Errorf("instanceProfiles: profile %q has more than %d tags", p.Name, iamMaxTags)
		case p.Role != "" && e.roles[iamKey(p.Role)] == nil && !roles[iamKey(p.Role)]:
			return fmt.Errorf("instanceProfiles: profile %q: role %q does not exist (seed it in iamRoles)", p.Name, p.Role)
		}
		profiles[iamKey(p.Name)] = true
	}
	return nil
}

// seedIAM adds the seed's roles and instance profiles; the caller holds e.mu and has
// validated the seed.
func (e *Emulator) seedIAM(s Seed, now time.Time) {
	for _, r := range s.IAMRoles {
		e.newRole(r.Name, orDefault(r.Path, "/"), r.Description, orDefault(r.AssumeRolePolicyDocument, ec2AssumeRolePolicy), r.Tags, now)
	}
	for _, sp := range s.InstanceProfiles {
		p := e.newInstanceProfile(sp.Name, orDefault(sp.Path, "/"), sp.Tags, now)
		if sp.Role != "" {
			p.role = e.roles[iamKey(sp.Role)]
		}
	}
}
