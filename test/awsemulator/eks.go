package awsemulator

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// EKS speaks restJson1: the operation is the method and path, bodies are JSON.

// eksOperation names the operation for a method and path ("" if unknown).
func eksOperation(method, path string) string {
	p := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case method == http.MethodGet && len(p) == 2 && p[0] == "clusters":
		return "DescribeCluster"
	case method == http.MethodGet && len(p) == 3 && p[0] == "clusters" && p[2] == "node-groups":
		return "ListNodegroups"
	case method == http.MethodGet && len(p) == 4 && p[0] == "clusters" && p[2] == "node-groups":
		return "DescribeNodegroup"
	case method == http.MethodPost && len(p) == 5 && p[0] == "clusters" && p[2] == "node-groups" && p[4] == "update-config":
		return "UpdateNodegroupConfig"
	case method == http.MethodGet && len(p) == 4 && p[0] == "clusters" && p[2] == "updates":
		return "DescribeUpdate"
	}
	return ""
}

// Every operation runs holding e.mu, on the node groups as of now.
func (e *Emulator) serveEKS(w http.ResponseWriter, req *request) *apiError {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.advance()
	p := strings.Split(strings.Trim(req.http.URL.Path, "/"), "/")
	switch req.action {
	case "DescribeCluster":
		e.describeCluster(w, p[1])
		return nil
	case "ListNodegroups":
		return e.listNodegroups(w, req, p[1])
	case "DescribeNodegroup":
		return e.describeNodegroup(w, p[1], p[3])
	case "UpdateNodegroupConfig":
		return e.updateNodegroupConfig(w, req, now, p[1], p[3])
	case "DescribeUpdate":
		return e.describeUpdate(w, req, p[1], p[3])
	default:
		return &apiError{status: http.StatusNotFound, code: "UnknownOperationException", message: fmt.Sprintf("%s %s is not an EKS operation this emulator serves", req.http.Method, req.http.URL.Path)}
	}
}

type jsonNodegroup struct {
	NodegroupName  string            `json:"nodegroupName"`
	NodegroupArn   string            `json:"nodegroupArn"`
	ClusterName    string            `json:"clusterName"`
	Version        string            `json:"version"`
	ReleaseVersion string            `json:"releaseVersion"`
	CreatedAt      float64           `json:"createdAt"`
	ModifiedAt     float64           `json:"modifiedAt"`
	Status         string            `json:"status"`
	CapacityType   string            `json:"capacityType"`
	ScalingConfig  jsonScalingConfig `json:"scalingConfig"`
	InstanceTypes  []string          `json:"instanceTypes"`
	Subnets        []string          `json:"subnets"`
	AmiType        string            `json:"amiType"`
	NodeRole       string            `json:"nodeRole"`
	Labels         map[string]string `json:"labels,omitempty"`
	Taints         []jsonTaint       `json:"taints,omitempty"`
	Tags           map[string]string `json:"tags,omitempty"`
	Resources      struct {
		AutoScalingGroups []struct {
			Name string `json:"name"`
		} `json:"autoScalingGroups"`
	} `json:"resources"`
	Health struct {
		Issues []any `json:"issues"`
	} `json:"health"`
}

type jsonScalingConfig struct {
	MinSize     *int32 `json:"minSize,omitempty"`
	MaxSize     *int32 `json:"maxSize,omitempty"`
	DesiredSize *int32 `json:"desiredSize,omitempty"`
}

type jsonTaint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

type jsonUpdate struct {
	ID        string        `json:"id"`
	Status    string        `json:"status"`
	Type      string        `json:"type"`
	Params    []jsonParam   `json:"params"`
	CreatedAt float64       `json:"createdAt"`
	Errors    []interface{} `json:"errors"`
}

type jsonParam struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

func epochSeconds(t time.Time) float64 {
	return float64(t.UnixMilli()) / 1000
}

// eksTaintEffect maps a Kubernetes taint effect to EKS's spelling.
func eksTaintEffect(effect string) string {
	switch effect {
	case "NoExecute":
		return "NO_EXECUTE"
	case "PreferNoSchedule":
		return "PREFER_NO_SCHEDULE"
	default:
		return "NO_SCHEDULE"
	}
}

// Defaults of a cluster no seed describes: EKS's default service CIDR and the Kubernetes
// version the emulator's node groups report.
const (
	defaultEKSClusterVersion     = "1.34"
	defaultEKSClusterServiceCIDR = "10.100.0.0/16"
)

// describeCluster answers for any cluster name, so a controller pointed at the emulator finds
// its cluster without a seed; a seeded cluster answers with its own version and service CIDR.
func (e *Emulator) describeCluster(w http.ResponseWriter, name string) {
	cluster, ok := e.clusters[name]
	if !ok {
		cluster = &SeedEKSCluster{Name: name}
	}
	version := cluster.Version
	if version == "" {
		version = defaultEKSClusterVersion
	}
	cidr := cluster.ServiceIPv4CIDR
	if cidr == "" {
		cidr = defaultEKSClusterServiceCIDR
	}
	endpointID := sha256.Sum256([]byte(name))
	type networkConfig struct {
		ServiceIPv4CIDR string `json:"serviceIpv4Cidr"`
		IPFamily        string `json:"ipFamily"`
	}
	out := struct {
		Name                    string        `json:"name"`
		ARN                     string        `json:"arn"`
		CreatedAt               float64       `json:"createdAt"`
		Version                 string        `json:"version"`
		Endpoint                string        `json:"endpoint"`
		Status                  string        `json:"status"`
		PlatformVersion         string        `json:"platformVersion"`
		KubernetesNetworkConfig networkConfig `json:"kubernetesNetworkConfig"`
	}{
		Name:                    name,
		ARN:                     fmt.Sprintf("arn:aws:eks:%s:%s:cluster/%s", e.opts.Region, e.opts.AccountID, name),
		CreatedAt:               epochSeconds(e.started),
		Version:                 version,
		Endpoint:                fmt.Sprintf("https://%X.gr7.%s.eks.amazonaws.com", endpointID[:16], e.opts.Region),
		Status:                  eksStatusActive,
		PlatformVersion:         "eks.1",
		KubernetesNetworkConfig: networkConfig{ServiceIPv4CIDR: cidr, IPFamily: "ipv4"},
	}
	writeJSON(w, "application/json", map[string]any{"cluster": out})
}

func (e *Emulator) lookupNodegroup(cluster, name string) (*eksNodeGroup, *apiError) {
	ng, ok := e.nodeGroups[cluster+"/"+name]
	if !ok {
		return nil, &apiError{status: http.StatusNotFound, code: "ResourceNotFoundException", message: fmt.Sprintf("No node group found for name: %s.", name)}
	}
	return ng, nil
}

func (e *Emulator) listNodegroups(w http.ResponseWriter, req *request, cluster string) *apiError {
	maxResults := 100
	if v := req.http.URL.Query().Get("maxResults"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return &apiError{status: http.StatusBadRequest, code: "InvalidParameterException", message: "maxResults must be between 1 and 100"}
		}
		maxResults = n
	}
	start := req.http.URL.Query().Get("nextToken")
	var names []string
	for _, key := range slices.Sorted(maps.Keys(e.nodeGroups)) {
		if c, n, _ := strings.Cut(key, "/"); c == cluster && n >= start {
			names = append(names, n)
		}
	}
	out := struct {
		Nodegroups []string `json:"nodegroups"`
		NextToken  string   `json:"nextToken,omitempty"`
	}{Nodegroups: names}
	if len(names) > maxResults {
		out.Nodegroups, out.NextToken = names[:maxResults], names[maxResults]
	}
	writeJSON(w, "application/json", out)
	return nil
}

func (e *Emulator) describeNodegroup(w http.ResponseWriter, cluster, name string) *apiError {
	ng, aerr := e.lookupNodegroup(cluster, name)
	if aerr != nil {
		return aerr
	}
	out := jsonNodegroup{
		NodegroupName: ng.name, NodegroupArn: ng.arn, ClusterName: ng.cluster,
		Version: "1.34", ReleaseVersion: "1.34.4-20260101",
		CreatedAt: epochSeconds(ng.created), ModifiedAt: epochSeconds(ng.modified),
		Status: ng.status, CapacityType: "ON_DEMAND",
		ScalingConfig: jsonScalingConfig{MinSize: &ng.min, MaxSize: &ng.max, DesiredSize: &ng.desired},
		InstanceTypes: ng.instanceTypes, Subnets: []string{}, AmiType: "AL2023_x86_64_STANDARD",
		NodeRole: fmt.Sprintf("arn:aws:iam::%s:role/%s-node", e.opts.AccountID, ng.cluster),
		Labels:   ng.labels, Tags: ng.tags,
	}
	for _, t := range ng.taints {
		out.Taints = append(out.Taints, jsonTaint{Key: t.Key, Value: t.Value, Effect: eksTaintEffect(t.Effect)})
	}
	out.Resources.AutoScalingGroups = append(out.Resources.AutoScalingGroups, struct {
		Name string `json:"name"`
	}{Name: ng.group.name})
	out.Health.Issues = []any{}
	writeJSON(w, "application/json", map[string]any{"nodegroup": out})
	return nil
}

func (e *Emulator) updateNodegroupConfig(w http.ResponseWriter, req *request, now time.Time, cluster, name string) *apiError {
	var in struct {
		ScalingConfig      *jsonScalingConfig `json:"scalingConfig"`
		ClientRequestToken string             `json:"clientRequestToken"`
	}
	if err := json.Unmarshal(req.body, &in); err != nil {
		return &apiError{status: http.StatusBadRequest, code: "InvalidParameterException", message: fmt.Sprintf("malformed request body: %v", err)}
	}
	ng, aerr := e.lookupNodegroup(cluster, name)
	if aerr != nil {
		return aerr
	}
	if ng.status != eksStatusActive {
		return &apiError{status: http.StatusConflict, code: "ResourceInUseException", message: fmt.Sprintf("Nodegroup %s cannot be updated as it is currently in %s state", name, ng.status)}
	}
	if in.ScalingConfig == nil {
		return &apiError{status: http.StatusBadRequest, code: "InvalidParameterException", message: "No changes needed"}
	}
	sc := in.ScalingConfig
	lo, hi, desired := deref(sc.MinSize, ng.min), deref(sc.MaxSize, ng.max), deref(sc.DesiredSize, ng.desired)
	switch {
	case lo < 0 || hi < 1:
		return &apiError{status: http.StatusBadRequest, code: "InvalidParameterException", message: "Minimum capacity can't be negative and maximum capacity must be at least 1"}
	case lo > hi:
		return &apiError{status: http.StatusBadRequest, code: "InvalidParameterException", message: fmt.Sprintf("Minimum capacity %d can't be greater than maximum capacity %d", lo, hi)}
	case desired > hi:
		return &apiError{status: http.StatusBadRequest, code: "InvalidParameterException", message: fmt.Sprintf("Desired capacity %d can't be greater than max size %d", desired, hi)}
	case desired < lo:
		return &apiError{status: http.StatusBadRequest, code: "InvalidParameterException", message: fmt.Sprintf("Desired capacity %d can't be less than min size %d", desired, lo)}
	case lo == ng.min && hi == ng.max && desired == ng.desired:
		return &apiError{status: http.StatusBadRequest, code: "InvalidParameterException", message: "No changes needed"}
	}
	u := &eksUpdate{id: e.newID(), created: now, status: eksUpdateInProgress, min: sc.MinSize, max: sc.MaxSize, desired: sc.DesiredSize}
	ng.updates = append(ng.updates, u)
	ng.status = eksStatusUpdating
	// A zero delay completes the update before the response, as if it were instant.
	e.advance()
	writeJSON(w, "application/json", map[string]any{"update": jsonNodegroupUpdate(u)})
	return nil
}

func jsonNodegroupUpdate(u *eksUpdate) jsonUpdate {
	out := jsonUpdate{ID: u.id, Status: u.status, Type: "ConfigUpdate", CreatedAt: epochSeconds(u.created), Errors: []any{}}
	for _, p := range []struct {
		name string
		v    *int32
	}{{"MinSize", u.min}, {"MaxSize", u.max}, {"DesiredSize", u.desired}} {
		if p.v != nil {
			out.Params = append(out.Params, jsonParam{Type: p.name, Value: strconv.Itoa(int(*p.v))})
		}
	}
	return out
}

func (e *Emulator) describeUpdate(w http.ResponseWriter, req *request, cluster, id string) *apiError {
	nodegroup := req.http.URL.Query().Get("nodegroupName")
	ng, aerr := e.lookupNodegroup(cluster, nodegroup)
	if aerr != nil {
		return aerr
	}
	for _, u := range ng.updates {
		if u.id == id {
			writeJSON(w, "application/json", map[string]any{"update": jsonNodegroupUpdate(u)})
			return nil
		}
	}
	return &apiError{status: http.StatusNotFound, code: "ResourceNotFoundException", message: fmt.Sprintf("No update found for ID: %s", id)}
}

func writeRESTJSONError(w http.ResponseWriter, _ *request, aerr *apiError) {
	w.Header().Set("X-Amzn-ErrorType", aerr.code)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(aerr.status)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": aerr.message})
}

func writeJSON(w http.ResponseWriter, contentType string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, fmt.Sprintf("encoding response, %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", contentType)
	_, _ = w.Write(b)
}
