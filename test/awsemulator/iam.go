package awsemulator

import (
	"encoding/xml"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// IAM speaks awsquery like Auto Scaling, under its own version and namespace. It is global:
// one account, no region in its ARNs.
const (
	iamVersion = "2010-05-08"
	iamXMLNS   = "https://iam.amazonaws.com/doc/" + iamVersion + "/"
)

// iamRole is an IAM role. Roles are seeded (the getting-started guides create the node role);
// Karpenter only reads them.
type iamRole struct {
	name, path, id, arn, description string
	// assumeRolePolicy is the trust policy as written (IAM sends it URL-encoded).
	assumeRolePolicy string
	created          time.Time
	tags             map[string]string
}

// iamInstanceProfile is an IAM instance profile: a container for at most one role.
type iamInstanceProfile struct {
	name, path, id, arn string
	created             time.Time
	role                *iamRole // nil while the profile holds no role
	tags                map[string]string
}

// IAM's limits and name rules, as its API reference documents them.
const (
	iamMaxTags          = 50
	iamMaxPathLength    = 512
	iamMaxSessionLength = 3600
)

var (
	iamNamePattern = regexp.MustCompile(`^[\w+=,.@-]{1,128}$`)
	iamPathPattern = regexp.MustCompile(`^(/|/[\x21-\x7E]+/)$`)
	// ec2AssumeRolePolicy is the trust policy of a node role: EC2 may assume it.
	ec2AssumeRolePolicy = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]}`
)

// iamKey is how IAM tells names apart: not by case.
func iamKey(name string) string { return strings.ToLower(name) }

func validIAMName(name string) bool { return iamNamePattern.MatchString(name) }

func validIAMPath(path string) bool {
	return len(path) <= iamMaxPathLength && iamPathPattern.MatchString(path)
}

func errIAM(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

func errNoSuchInstanceProfile(name string) *apiError {
	return errIAM(http.StatusNotFound, "NoSuchEntity", "Instance Profile %s cannot be found.", name)
}

// errNoSuchRole names a role, which is how callers (upstream's role-not-found cache) tell it
// from a missing instance profile.
func errNoSuchRole(name string) *apiError {
	return errIAM(http.StatusNotFound, "NoSuchEntity", "The role with name %s cannot be found.", name)
}

// Every operation runs holding e.mu.
func (e *Emulator) serveIAM(w http.ResponseWriter, req *request) *apiError {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.advance()
	var (
		result any
		aerr   *apiError
	)
	switch req.action {
	case "GetRole":
		result, aerr = e.getRole(req)
	case "CreateInstanceProfile":
		result, aerr = e.createInstanceProfile(req, now)
	case "GetInstanceProfile":
		result, aerr = e.getInstanceProfile(req)
	case "AddRoleToInstanceProfile":
		aerr = e.addRoleToInstanceProfile(req)
	case "RemoveRoleFromInstanceProfile":
		aerr = e.removeRoleFromInstanceProfile(req)
	case "TagInstanceProfile":
		aerr = e.tagInstanceProfile(req)
	case "DeleteInstanceProfile":
		aerr = e.deleteInstanceProfile(req)
	default:
		aerr = errUnknownOperation(req)
	}
	if aerr != nil {
		return aerr
	}
	writeQueryResponse(w, req, result)
	return nil
}

// iamName reads a required name parameter, refusing what IAM's pattern refuses.
func iamName(req *request, param string) (string, *apiError) {
	v := req.form.Get(param)
	if v == "" {
		return "", errValidation("1 validation error detected: Value null at '%s' failed to satisfy constraint: Member must not be null", lowerFirst(param))
	}
	if !validIAMName(v) {
		return "", errValidation("1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\w+=,.@-]+ and have length between 1 and 128", v, lowerFirst(param))
	}
	return v, nil
}

// iamTags reads Tags.member.N.{Key,Value}, checking what IAM checks of each tag.
func iamTags(req *request) (map[string]string, *apiError) {
	out := map[string]string{}
	for i := 1; ; i++ {
		prefix := fmt.Sprintf("Tags.member.%d.", i)
		key, ok := req.form[prefix+"Key"]
		if !ok {
			return out, nil
		}
		value := req.form.Get(prefix + "Value")
		switch {
		case len(key[0]) == 0 || len(key[0]) > 128:
			return nil, errValidation("1 validation error detected: Value '%s' at 'tags.%d.member.key' failed to satisfy constraint: Member must have length between 1 and 128", key[0], i)
		case len(value) > 256:
			return nil, errValidation("1 validation error detected: Value at 'tags.%d.member.value' failed to satisfy constraint: Member must have length less than or equal to 256", i)
		case strings.HasPrefix(strings.ToLower(key[0]), "aws:"):
			return nil, errIAM(http.StatusBadRequest, "InvalidInput", "User-defined tag keys can't start with 'aws:'; %s is reserved.", key[0])
		}
		out[key[0]] = value
	}
}

func (e *Emulator) lookupInstanceProfile(name string) (*iamInstanceProfile, *apiError) {
	p, ok := e.instanceProfiles[iamKey(name)]
	if !ok {
		return nil, errNoSuchInstanceProfile(name)
	}
	return p, nil
}

func (e *Emulator) lookupRole(name string) (*iamRole, *apiError) {
	r, ok := e.roles[iamKey(name)]
	if !ok {
		return nil, errNoSuchRole(name)
	}
	return r, nil
}

func (e *Emulator) getRole(req *request) (any, *apiError) {
	name, aerr := iamName(req, "RoleName")
	if aerr != nil {
		return nil, aerr
	}
	r, aerr := e.lookupRole(name)
	if aerr != nil {
		return nil, aerr
	}
	return struct {
		XMLName xml.Name `xml:"GetRoleResult"`
		Role    xmlRole  `xml:"Role"`
	}{Role: xmlIAMRole(r, true)}, nil
}

func (e *Emulator) createInstanceProfile(req *request, now time.Time) (any, *apiError) {
	name, aerr := iamName(req, "InstanceProfileName")
	if aerr != nil {
		return nil, aerr
	}
	path := orDefault(req.form.Get("Path"), "/")
	if !validIAMPath(path) {
		return nil, errValidation("1 validation error detected: Value '%s' at 'path' failed to satisfy constraint: Member must satisfy regular expression pattern: (\\u002F)|(\\u002F[\\u0021-\\u007E]+\\u002F)", path)
	}
	tags, aerr := iamTags(req)
	if aerr != nil {
		return nil, aerr
	}
	if len(tags) > iamMaxTags {
		return nil, errIAM(http.StatusConflict, "LimitExceeded", "Cannot exceed quota for TagsPerInstanceProfile: %d", iamMaxTags)
	}
	if _, exists := e.instanceProfiles[iamKey(name)]; exists {
		return nil, errIAM(http.StatusConflict, "EntityAlreadyExists", "Instance Profile %s already exists.", name)
	}
	p := e.newInstanceProfile(name, path, tags, now)
	return struct {
		XMLName         xml.Name              `xml:"CreateInstanceProfileResult"`
		InstanceProfile xmlIAMInstanceProfile `xml:"InstanceProfile"`
	}{InstanceProfile: xmlInstanceProfile(p)}, nil
}

// newInstanceProfile adds an instance profile; the caller holds e.mu.
func (e *Emulator) newInstanceProfile(name, path string, tags map[string]string, now time.Time) *iamInstanceProfile {
	p := &iamInstanceProfile{
		name: name, path: path, id: e.newIAMID("AIPA"), created: now, tags: maps.Clone(tags),
		arn: fmt.Sprintf("arn:aws:iam::%s:instance-profile%s%s", e.opts.AccountID, path, name),
	}
	e.instanceProfiles[iamKey(name)] = p
	return p
}

// newRole adds a role; the caller holds e.mu.
func (e *Emulator) newRole(name, path, description, assumeRolePolicy string, tags map[string]string, now time.Time) *iamRole {
	r := &iamRole{
		name: name, path: path, id: e.newIAMID("AROA"), description: description, assumeRolePolicy: assumeRolePolicy,
		created: now, tags: maps.Clone(tags), arn: fmt.Sprintf("arn:aws:iam::%s:role%s%s", e.opts.AccountID, path, name),
	}
	e.roles[iamKey(name)] = r
	return r
}

// newIAMID returns an IAM unique id: a type prefix (AIPA, AROA) and 17 characters; the caller
// holds e.mu.
func (e *Emulator) newIAMID(prefix string) string {
	e.nextID++
	return fmt.Sprintf("%s%017X", prefix, e.nextID)
}

func (e *Emulator) getInstanceProfile(req *request) (any, *apiError) {
	name, aerr := iamName(req, "InstanceProfileName")
	if aerr != nil {
		return nil, aerr
	}
	p, aerr := e.lookupInstanceProfile(name)
	if aerr != nil {
		return nil, aerr
	}
	return struct {
		XMLName         xml.Name              `xml:"GetInstanceProfileResult"`
		InstanceProfile xmlIAMInstanceProfile `xml:"InstanceProfile"`
	}{InstanceProfile: xmlInstanceProfile(p)}, nil
}

// profileAndRole reads InstanceProfileName and RoleName and finds both, the profile first.
func (e *Emulator) profileAndRole(req *request) (*iamInstanceProfile, *iamRole, *apiError) {
	profileName, aerr := iamName(req, "InstanceProfileName")
	if aerr != nil {
		return nil, nil, aerr
	}
	roleName, aerr := iamName(req, "RoleName")
	if aerr != nil {
		return nil, nil, aerr
	}
	p, aerr := e.lookupInstanceProfile(profileName)
	if aerr != nil {
		return nil, nil, aerr
	}
	r, aerr := e.lookupRole(roleName)
	if aerr != nil {
		return nil, nil, aerr
	}
	return p, r, nil
}

func (e *Emulator) addRoleToInstanceProfile(req *request) *apiError {
	p, r, aerr := e.profileAndRole(req)
	if aerr != nil {
		return aerr
	}
	// An instance profile holds one role; IAM counts the one it has, whichever it is.
	if p.role != nil {
		return errIAM(http.StatusConflict, "LimitExceeded", "Cannot exceed quota for InstanceSessionsPerInstanceProfile: 1")
	}
	p.role = r
	return nil
}

func (e *Emulator) removeRoleFromInstanceProfile(req *request) *apiError {
	p, r, aerr := e.profileAndRole(req)
	if aerr != nil {
		return aerr
	}
	if p.role != r {
		return errIAM(http.StatusNotFound, "NoSuchEntity", "The role with name %s is not in the instance profile %s.", r.name, p.name)
	}
	p.role = nil
	return nil
}

func (e *Emulator) tagInstanceProfile(req *request) *apiError {
	name, aerr := iamName(req, "InstanceProfileName")
	if aerr != nil {
		return aerr
	}
	tags, aerr := iamTags(req)
	if aerr != nil {
		return aerr
	}
	p, aerr := e.lookupInstanceProfile(name)
	if aerr != nil {
		return aerr
	}
	merged := maps.Clone(p.tags)
	if merged == nil {
		merged = map[string]string{}
	}
	maps.Copy(merged, tags)
	if len(merged) > iamMaxTags {
		return errIAM(http.StatusConflict, "LimitExceeded", "Cannot exceed quota for TagsPerInstanceProfile: %d", iamMaxTags)
	}
	p.tags = merged
	return nil
}

func (e *Emulator) deleteInstanceProfile(req *request) *apiError {
	name, aerr := iamName(req, "InstanceProfileName")
	if aerr != nil {
		return aerr
	}
	p, aerr := e.lookupInstanceProfile(name)
	if aerr != nil {
		return aerr
	}
	if p.role != nil {
		return errIAM(http.StatusConflict, "DeleteConflict", "Cannot delete entity, must remove roles from instance profile first.")
	}
	delete(e.instanceProfiles, iamKey(name))
	return nil
}

// instanceProfileForLaunch finds the profile a launch template names by name or ARN, as EC2
// checks it at launch; the caller holds e.mu.
func (e *Emulator) instanceProfileForLaunch(name, arn string) (*iamInstanceProfile, *apiError) {
	if name != "" {
		if p, ok := e.instanceProfiles[iamKey(name)]; ok {
			return p, nil
		}
		return nil, errEC2InvalidParameter("Value (%s) for parameter iamInstanceProfile.name is invalid. Invalid IAM Instance Profile name", name)
	}
	for _, p := range e.instanceProfiles {
		if p.arn == arn {
			return p, nil
		}
	}
	return nil, errEC2InvalidParameter("Value (%s) for parameter iamInstanceProfile.arn is invalid. Invalid IAM Instance Profile ARN", arn)
}

type xmlIAMTag struct {
	Key   string `xml:"Key"`
	Value string `xml:"Value"`
}

type xmlRole struct {
	Path                     string                `xml:"Path"`
	RoleName                 string                `xml:"RoleName"`
	RoleID                   string                `xml:"RoleId"`
	Arn                      string                `xml:"Arn"`
	CreateDate               string                `xml:"CreateDate"`
	AssumeRolePolicyDocument string                `xml:"AssumeRolePolicyDocument"`
	Description              string                `xml:"Description,omitempty"`
	MaxSessionDuration       int32                 `xml:"MaxSessionDuration,omitempty"`
	Tags                     *xmlMember[xmlIAMTag] `xml:"Tags,omitempty"`
}

type xmlIAMInstanceProfile struct {
	Path                string                `xml:"Path"`
	InstanceProfileName string                `xml:"InstanceProfileName"`
	InstanceProfileID   string                `xml:"InstanceProfileId"`
	Arn                 string                `xml:"Arn"`
	CreateDate          string                `xml:"CreateDate"`
	Roles               xmlMember[xmlRole]    `xml:"Roles"`
	Tags                *xmlMember[xmlIAMTag] `xml:"Tags,omitempty"`
}

// xmlIAMRole is a role as GetRole shows it (full) or as a member of an instance profile
// (without tags and session duration, as IAM lists it there).
func xmlIAMRole(r *iamRole, full bool) xmlRole {
	x := xmlRole{
		Path: r.path, RoleName: r.name, RoleID: r.id, Arn: r.arn, CreateDate: r.created.UTC().Format(time.RFC3339),
		// IAM sends policy documents URL-encoded (RFC 3986).
		AssumeRolePolicyDocument: strings.ReplaceAll(url.QueryEscape(r.assumeRolePolicy), "+", "%20"),
		Description:              r.description,
	}
	if full {
		x.MaxSessionDuration, x.Tags = iamMaxSessionLength, xmlIAMTags(r.tags)
	}
	return x
}

func xmlInstanceProfile(p *iamInstanceProfile) xmlIAMInstanceProfile {
	x := xmlIAMInstanceProfile{
		Path: p.path, InstanceProfileName: p.name, InstanceProfileID: p.id, Arn: p.arn,
		CreateDate: p.created.UTC().Format(time.RFC3339), Tags: xmlIAMTags(p.tags),
	}
	if p.role != nil {
		x.Roles.Members = []xmlRole{xmlIAMRole(p.role, false)}
	}
	return x
}

func xmlIAMTags(tags map[string]string) *xmlMember[xmlIAMTag] {
	if len(tags) == 0 {
		return nil
	}
	out := &xmlMember[xmlIAMTag]{}
	for _, k := range sortedKeys(tags) {
		out.Members = append(out.Members, xmlIAMTag{Key: k, Value: tags[k]})
	}
	return out
}
