package operator

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// kubeClientRequests counts the controller's requests to the API server by verb and resource:
// client-go's own rest_client_requests_total names only the HTTP method and host, which cannot
// tell a status patch from a scale update.
var kubeClientRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: "karpenter", Subsystem: "kube_client", Name: "requests_total",
	Help: "Requests of the controller to the Kubernetes API server by verb (get, list, watch, create, update, patch, delete), resource (with its subresource) and response code.",
}, []string{"verb", "resource", "code"})

func init() {
	crmetrics.Registry.MustRegister(kubeClientRequests)
}

// countedRequests counts every request of the controller's clients in kubeClientRequests.
type countedRequests struct {
	next http.RoundTripper
}

func (c countedRequests) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	code := "error"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	verb, resource := requestKind(req.Method, req.URL.Path, req.URL.Query().Get("watch"))
	kubeClientRequests.WithLabelValues(verb, resource, code).Inc()
	return resp, err
}

// requestKind is the API verb and resource of a request to the API server, as kube-apiserver
// names them: "get" and "deployments/scale" for GET /apis/apps/v1/namespaces/a/deployments/b/scale.
// Paths outside /api and /apis (discovery, /version) are the resource "nonresource".
func requestKind(method, path, watch string) (verb, resource string) {
	segments := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(segments) >= 3 && segments[0] == "api":
		segments = segments[2:] // api, v1
	case len(segments) >= 4 && segments[0] == "apis":
		segments = segments[3:] // apis, group, version
	default:
		return strings.ToLower(method), "nonresource"
	}
	if len(segments) >= 3 && segments[0] == "namespaces" {
		segments = segments[2:]
	}
	resource = segments[0]
	named := len(segments) >= 2
	if len(segments) >= 3 {
		resource += "/" + segments[2]
	}
	switch method {
	case http.MethodGet:
		switch {
		case watch == "true" || watch == "1":
			verb = "watch"
		case named:
			verb = "get"
		default:
			verb = "list"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
		if !named {
			verb = "deletecollection"
		}
	default:
		verb = strings.ToLower(method)
	}
	return verb, resource
}
