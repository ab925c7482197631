package awsemulator

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
)

type launchTemplate struct {
	id, name, clientToken string
	created               time.Time
	tags                  map[string]string
	data                  LaunchTemplateData
}

var launchTemplateName = regexp.MustCompile(`^[a-zA-Z0-9().\-/_]{3,128}$`)

func errLaunchTemplateNameNotFound() *apiError {
	return errEC2("InvalidLaunchTemplateName.NotFoundException", "At least one of the launch templates specified in the request does not exist.")
}

func errLaunchTemplateIDNotFound(id string) *apiError {
	return errEC2("InvalidLaunchTemplateId.NotFound", "The specified launch template, with template ID %s, does not exist.", id)
}

type xmlLaunchTemplate struct {
	LaunchTemplateID     string            `xml:"launchTemplateId"`
	LaunchTemplateName   string            `xml:"launchTemplateName"`
	CreateTime           string            `xml:"createTime"`
	CreatedBy            string            `xml:"createdBy"`
	DefaultVersionNumber int64             `xml:"defaultVersionNumber"`
	LatestVersionNumber  int64             `xml:"latestVersionNumber"`
	TagSet               *xmlItems[ec2Tag] `xml:"tagSet"`
}

func (e *Emulator) xmlLaunchTemplate(lt *launchTemplate) xmlLaunchTemplate {
	return xmlLaunchTemplate{
		LaunchTemplateID: lt.id, LaunchTemplateName: lt.name, CreateTime: lt.created.UTC().Format(time.RFC3339Nano),
		CreatedBy:            fmt.Sprintf("arn:aws:sts::%s:assumed-role/karpenter/emulated", e.opts.AccountID),
		DefaultVersionNumber: 1, LatestVersionNumber: 1, TagSet: tagSet(lt.tags),
	}
}

func (e *Emulator) createLaunchTemplate(q ec2Query, now time.Time) (any, *apiError) {
	type result struct {
		LaunchTemplate xmlLaunchTemplate `xml:"launchTemplate"`
	}
	name, token := q.str("LaunchTemplateName"), q.str("ClientToken")
	if token != "" {
		for _, lt := range e.launchTemplates {
			if lt.clientToken == token {
				return result{e.xmlLaunchTemplate(lt)}, nil
			}
		}
	}
	if !launchTemplateName.MatchString(name) {
		return nil, errEC2("InvalidLaunchTemplateName.MalformedException", "A launch template name must be between 3 and 128 characters, and may contain letters, numbers, and the following characters: - ( ) . / _.'")
	}
	if e.launchTemplateByName(name) != nil {
		return nil, errEC2("InvalidLaunchTemplateName.AlreadyExistsException", "Launch template name already in use.")
	}
	if !q.has("LaunchTemplateData") {
		return nil, errEC2("MissingParameter", "The request must contain the parameter LaunchTemplateData")
	}
	data, aerr := parseLaunchTemplateData(q.sub("LaunchTemplateData"))
	if aerr != nil {
		return nil, aerr
	}
	lt := &launchTemplate{
		id: e.newResourceID("lt"), name: name, clientToken: token, created: now,
		tags: q.tagSpecifications()["launch-template"], data: data,
	}
	e.launchTemplates[lt.id] = lt
	return result{e.xmlLaunchTemplate(lt)}, nil
}

// launchTemplateByName finds a template; the caller holds e.mu.
func (e *Emulator) launchTemplateByName(name string) *launchTemplate {
	for _, lt := range e.launchTemplates {
		if lt.name == name {
			return lt
		}
	}
	return nil
}

// lookupLaunchTemplate finds a template by id or, without one, by name.
func (e *Emulator) lookupLaunchTemplate(id, name string) (*launchTemplate, *apiError) {
	if id != "" {
		lt, ok := e.launchTemplates[id]
		if !ok {
			return nil, errLaunchTemplateIDNotFound(id)
		}
		return lt, nil
	}
	if name == "" {
		return nil, errEC2("MissingParameter", "The request must include either the launch template ID or the launch template name.")
	}
	lt := e.launchTemplateByName(name)
	if lt == nil {
		return nil, errLaunchTemplateNameNotFound()
	}
	return lt, nil
}

func (e *Emulator) describeLaunchTemplates(q ec2Query) (any, *apiError) {
	filters, aerr := q.filters("launch-template-name", "create-time")
	if aerr != nil {
		return nil, aerr
	}
	ids, names := q.strs("LaunchTemplateId"), q.strs("LaunchTemplateName")
	for _, id := range ids {
		if _, ok := e.launchTemplates[id]; !ok {
			return nil, errLaunchTemplateIDNotFound(id)
		}
	}
	for _, n := range names {
		if e.launchTemplateByName(n) == nil {
			return nil, errLaunchTemplateNameNotFound()
		}
	}
	var out []xmlLaunchTemplate
	for _, id := range sortedKeys(e.launchTemplates) {
		lt := e.launchTemplates[id]
		if (len(ids) > 0 && !slices.Contains(ids, id)) || (len(names) > 0 && !slices.Contains(names, lt.name)) {
			continue
		}
		x := e.xmlLaunchTemplate(lt)
		if matchFilters(filters, lt.tags, func(f string) []string {
			if f == "launch-template-name" {
				return []string{lt.name}
			}
			return []string{x.CreateTime}
		}) {
			out = append(out, x)
		}
	}
	out, next, aerr := page(q, out, func(x xmlLaunchTemplate) string { return x.LaunchTemplateID }, 1, 200, 0)
	if aerr != nil {
		return nil, aerr
	}
	return struct {
		LaunchTemplates *xmlItems[xmlLaunchTemplate] `xml:"launchTemplates"`
		NextToken       string                       `xml:"nextToken,omitempty"`
	}{LaunchTemplates: items(out), NextToken: next}, nil
}

func (e *Emulator) deleteLaunchTemplate(q ec2Query) (any, *apiError) {
	lt, aerr := e.lookupLaunchTemplate(q.str("LaunchTemplateId"), q.str("LaunchTemplateName"))
	if aerr != nil {
		return nil, aerr
	}
	delete(e.launchTemplates, lt.id)
	return struct {
		LaunchTemplate xmlLaunchTemplate `xml:"launchTemplate"`
	}{e.xmlLaunchTemplate(lt)}, nil
}

// LaunchTemplate is a launch template as the admin API shows it.
type LaunchTemplate struct {
	LaunchTemplateID   string             `json:"launchTemplateId"`
	LaunchTemplateName string             `json:"launchTemplateName"`
	Tags               map[string]string  `json:"tags,omitempty"`
	Data               LaunchTemplateData `json:"data"`
}

func (lt *launchTemplate) view() LaunchTemplate {
	return LaunchTemplate{LaunchTemplateID: lt.id, LaunchTemplateName: lt.name, Tags: maps.Clone(lt.tags), Data: lt.data.clone()}
}

// LaunchTemplates lists the launch templates by name: copies of what CreateLaunchTemplate
// received, for tests to read field by field.
func (e *Emulator) LaunchTemplates() []LaunchTemplate {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := []LaunchTemplate{}
	for _, lt := range e.launchTemplates {
		out = append(out, lt.view())
	}
	slices.SortFunc(out, func(a, b LaunchTemplate) int { return strings.Compare(a.LaunchTemplateName, b.LaunchTemplateName) })
	return out
}

// LaunchTemplate is a copy of the launch template named name, as CreateLaunchTemplate
// received it; ok is false when there is none.
func (e *Emulator) LaunchTemplate(name string) (_ LaunchTemplate, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	lt := e.launchTemplateByName(name)
	if lt == nil {
		return LaunchTemplate{}, false
	}
	return lt.view(), true
}
