package awsemulator

import (
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Auto Scaling speaks awsquery: form-encoded requests, XML responses.
const autoScalingXMLNS = "https://autoscaling.amazonaws.com/doc/2011-01-01/"

// Every operation runs holding e.mu, on the groups as of now.
func (e *Emulator) serveAutoScaling(w http.ResponseWriter, req *request) *apiError {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.advance()
	switch req.action {
	case "DescribeAutoScalingGroups":
		return e.describeAutoScalingGroups(w, req, now)
	case "SetDesiredCapacity":
		return e.setDesiredCapacity(w, req)
	case "UpdateAutoScalingGroup":
		return e.updateAutoScalingGroup(w, req)
	default:
		return errUnknownOperation(req)
	}
}

type xmlMember[T any] struct {
	Members []T `xml:"member"`
}

type xmlAutoScalingGroup struct {
	AutoScalingGroupName string                 `xml:"AutoScalingGroupName"`
	AutoScalingGroupARN  string                 `xml:"AutoScalingGroupARN"`
	MinSize              int32                  `xml:"MinSize"`
	MaxSize              int32                  `xml:"MaxSize"`
	DesiredCapacity      int32                  `xml:"DesiredCapacity"`
	DefaultCooldown      int32                  `xml:"DefaultCooldown"`
	AvailabilityZones    xmlMember[string]      `xml:"AvailabilityZones"`
	HealthCheckType      string                 `xml:"HealthCheckType"`
	CreatedTime          string                 `xml:"CreatedTime"`
	Instances            xmlMember[xmlInstance] `xml:"Instances"`
	Tags                 xmlMember[xmlTag]      `xml:"Tags"`
	ServiceLinkedRoleARN string                 `xml:"ServiceLinkedRoleARN"`
}

type xmlInstance struct {
	InstanceID           string `xml:"InstanceId"`
	InstanceType         string `xml:"InstanceType"`
	AvailabilityZone     string `xml:"AvailabilityZone"`
	LifecycleState       string `xml:"LifecycleState"`
	HealthStatus         string `xml:"HealthStatus"`
	ProtectedFromScaleIn bool   `xml:"ProtectedFromScaleIn"`
}

type xmlTag struct {
	ResourceID        string `xml:"ResourceId"`
	ResourceType      string `xml:"ResourceType"`
	Key               string `xml:"Key"`
	Value             string `xml:"Value"`
	PropagateAtLaunch bool   `xml:"PropagateAtLaunch"`
}

type xmlResponseMetadata struct {
	RequestID string `xml:"RequestId"`
}

const (
	defaultMaxRecords = 50
	maxMaxRecords     = 100
)

func (e *Emulator) describeAutoScalingGroups(w http.ResponseWriter, req *request, now time.Time) *apiError {
	maxRecords := defaultMaxRecords
	if v := req.form.Get("MaxRecords"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxMaxRecords {
			return errValidation("1 validation error detected: Value '%s' at 'maxRecords' failed to satisfy constraint: Member must have value between 1 and %d", v, maxMaxRecords)
		}
		maxRecords = n
	}
	start := ""
	if tok := req.form.Get("NextToken"); tok != "" {
		b, err := base64.StdEncoding.DecodeString(tok)
		if err != nil {
			return &apiError{status: http.StatusBadRequest, code: "InvalidNextToken", message: "The token is invalid."}
		}
		start = string(b)
	}
	wanted := memberList(req.form, "AutoScalingGroupNames")

	names := slices.Sorted(maps.Keys(e.groups))
	if len(wanted) > 0 {
		names = slices.DeleteFunc(names, func(n string) bool { return !slices.Contains(wanted, n) })
	}
	names = slices.DeleteFunc(names, func(n string) bool { return n < start })
	next := ""
	if len(names) > maxRecords {
		next = base64.StdEncoding.EncodeToString([]byte(names[maxRecords]))
		names = names[:maxRecords]
	}
	groups := make([]xmlAutoScalingGroup, 0, len(names))
	for _, n := range names {
		groups = append(groups, e.xmlGroup(e.groups[n], now))
	}

	type result struct {
		XMLName           xml.Name                       `xml:"DescribeAutoScalingGroupsResult"`
		AutoScalingGroups xmlMember[xmlAutoScalingGroup] `xml:"AutoScalingGroups"`
		NextToken         string                         `xml:"NextToken,omitempty"`
	}
	writeQueryResponse(w, req, result{AutoScalingGroups: xmlMember[xmlAutoScalingGroup]{Members: groups}, NextToken: next})
	return nil
}

// xmlGroup renders a group; the caller holds e.mu. Labels and taints are
// published as the cluster-autoscaler node-template tags, the convention
// autoscalers use to learn a group's node shape when it has no nodes.
func (e *Emulator) xmlGroup(g *autoScalingGroup, now time.Time) xmlAutoScalingGroup {
	x := xmlAutoScalingGroup{
		AutoScalingGroupName: g.name, AutoScalingGroupARN: g.arn,
		MinSize: g.min, MaxSize: g.max, DesiredCapacity: g.desired, DefaultCooldown: 300,
		AvailabilityZones: xmlMember[string]{Members: g.zones}, HealthCheckType: "EC2",
		CreatedTime:          g.created.UTC().Format(time.RFC3339Nano),
		ServiceLinkedRoleARN: fmt.Sprintf("arn:aws:iam::%s:role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling", e.opts.AccountID),
	}
	for _, i := range g.instances {
		x.Instances.Members = append(x.Instances.Members, xmlInstance{
			InstanceID: i.id, InstanceType: g.instanceType, AvailabilityZone: i.zone,
			LifecycleState: e.lifecycle(i, now), HealthStatus: "Healthy",
		})
	}
	tag := func(k, v string, propagate bool) {
		x.Tags.Members = append(x.Tags.Members, xmlTag{ResourceID: g.name, ResourceType: "auto-scaling-group", Key: k, Value: v, PropagateAtLaunch: propagate})
	}
	for _, k := range slices.Sorted(maps.Keys(g.tags)) {
		tag(k, g.tags[k], false)
	}
	for _, k := range slices.Sorted(maps.Keys(g.labels)) {
		tag("k8s.io/cluster-autoscaler/node-template/label/"+k, g.labels[k], false)
	}
	for _, t := range g.taints {
		tag("k8s.io/cluster-autoscaler/node-template/taint/"+t.Key, t.Value+":"+t.Effect, false)
	}
	if cluster, name, ok := strings.Cut(g.eksNodeGroup, "/"); ok {
		tag("eks:cluster-name", cluster, true)
		tag("eks:nodegroup-name", name, true)
	}
	return x
}

func (e *Emulator) setDesiredCapacity(w http.ResponseWriter, req *request) *apiError {
	name := req.form.Get("AutoScalingGroupName")
	desired, aerr := int32Param(req, "DesiredCapacity", true)
	if aerr != nil {
		return aerr
	}
	g, aerr := e.lookupGroup(name)
	if aerr != nil {
		return aerr
	}
	switch {
	case *desired > g.max:
		return errValidation("New SetDesiredCapacity value %d is above max value %d for the AutoScalingGroup.", *desired, g.max)
	case *desired < g.min:
		return errValidation("New SetDesiredCapacity value %d is below min value %d for the AutoScalingGroup.", *desired, g.min)
	}
	g.desired = *desired
	e.converge(g, e.opts.Clock.Now())
	writeQueryResponse(w, req, nil)
	return nil
}

func (e *Emulator) updateAutoScalingGroup(w http.ResponseWriter, req *request) *apiError {
	name := req.form.Get("AutoScalingGroupName")
	var params [3]*int32
	for i, p := range []string{"MinSize", "MaxSize", "DesiredCapacity"} {
		v, aerr := int32Param(req, p, false)
		if aerr != nil {
			return aerr
		}
		params[i] = v
	}
	g, aerr := e.lookupGroup(name)
	if aerr != nil {
		return aerr
	}
	lo, hi, desired := deref(params[0], g.min), deref(params[1], g.max), deref(params[2], g.desired)
	if lo > hi {
		return errValidation("Max bound, %d, must be greater than or equal to min bound, %d", hi, lo)
	}
	// Like Auto Scaling, moving a bound drags the desired capacity along.
	g.min, g.max, g.desired = lo, hi, min(max(desired, lo), hi)
	e.converge(g, e.opts.Clock.Now())
	writeQueryResponse(w, req, nil)
	return nil
}

// lookupGroup finds a group by name; the caller holds e.mu.
func (e *Emulator) lookupGroup(name string) (*autoScalingGroup, *apiError) {
	if name == "" {
		return nil, errValidation("1 validation error detected: Value null at 'autoScalingGroupName' failed to satisfy constraint: Member must not be null")
	}
	g, ok := e.groups[name]
	if !ok {
		return nil, errValidation("AutoScalingGroup name not found - AutoScalingGroup '%s' not found", name)
	}
	return g, nil
}

func int32Param(req *request, name string, required bool) (*int32, *apiError) {
	v := req.form.Get(name)
	if v == "" {
		if required {
			return nil, errValidation("1 validation error detected: Value null at '%s' failed to satisfy constraint: Member must not be null", lowerFirst(name))
		}
		return nil, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return nil, errValidation("Value '%s' at '%s' is not a valid integer", v, lowerFirst(name))
	}
	i := int32(n)
	return &i, nil
}

func lowerFirst(s string) string {
	return strings.ToLower(s[:1]) + s[1:]
}

// memberList reads an awsquery list parameter: Name.member.1, Name.member.2, ...
func memberList(form map[string][]string, name string) []string {
	var out []string
	for i := 1; ; i++ {
		v, ok := form[fmt.Sprintf("%s.member.%d", name, i)]
		if !ok || len(v) == 0 {
			return out
		}
		out = append(out, v[0])
	}
}

// queryXMLNS is the namespace of an awsquery service's responses.
func queryXMLNS(service string) string {
	if service == serviceIAM {
		return iamXMLNS
	}
	return autoScalingXMLNS
}

// writeQueryResponse writes <ActionResponse>result<ResponseMetadata/></ActionResponse>;
// result, when not nil, is a struct whose XMLName is <ActionResult>.
func writeQueryResponse(w http.ResponseWriter, req *request, result any) {
	type response struct {
		XMLName  xml.Name
		XMLNS    string              `xml:"xmlns,attr"`
		Result   any                 `xml:",omitempty"`
		Metadata xmlResponseMetadata `xml:"ResponseMetadata"`
	}
	resp := response{XMLName: xml.Name{Local: req.action + "Response"}, XMLNS: queryXMLNS(req.service), Result: result, Metadata: xmlResponseMetadata{RequestID: req.requestID}}
	writeXML(w, http.StatusOK, resp)
}

func writeQueryError(w http.ResponseWriter, req *request, aerr *apiError) {
	type errorResponse struct {
		XMLName xml.Name `xml:"ErrorResponse"`
		XMLNS   string   `xml:"xmlns,attr"`
		Error   struct {
			Type    string `xml:"Type"`
			Code    string `xml:"Code"`
			Message string `xml:"Message"`
		} `xml:"Error"`
		RequestID string `xml:"RequestId"`
	}
	resp := errorResponse{XMLNS: queryXMLNS(req.service), RequestID: req.requestID}
	resp.Error.Type, resp.Error.Code, resp.Error.Message = aerr.fault(), aerr.compatibleCode(), aerr.message
	writeXML(w, aerr.status, resp)
}

func writeXML(w http.ResponseWriter, status int, v any) {
	b, err := xml.Marshal(v)
	if err != nil {
		http.Error(w, fmt.Sprintf("encoding response, %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(b)
}
