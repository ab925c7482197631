package awsemulator

import (
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// EC2 speaks ec2query: form-encoded requests whose lists are flattened as Name.1, Name.2 and
// whose structures nest as Name.1.Field; XML responses with lists as <item> elements.
const (
	ec2Version = "2016-11-15"
	ec2XMLNS   = "http://ec2.amazonaws.com/doc/" + ec2Version + "/"
)

// Every operation runs holding e.mu, on the state as of now.
func (e *Emulator) serveEC2(w http.ResponseWriter, req *request) *apiError {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.advance()
	q := ec2Query{form: req.form}
	var (
		body any
		aerr *apiError
	)
	switch req.action {
	case "DescribeInstanceTypes":
		body, aerr = e.describeInstanceTypes(q)
	case "DescribeInstanceTypeOfferings":
		body, aerr = e.describeInstanceTypeOfferings(q)
	case "DescribeSpotPriceHistory":
		body, aerr = e.describeSpotPriceHistory(q)
	case "DescribeSubnets":
		body, aerr = e.describeSubnets(q)
	case "DescribeSecurityGroups":
		body, aerr = e.describeSecurityGroups(q)
	case "DescribeLaunchTemplates":
		body, aerr = e.describeLaunchTemplates(q)
	case "CreateLaunchTemplate":
		body, aerr = e.createLaunchTemplate(q, now)
	case "DeleteLaunchTemplate":
		body, aerr = e.deleteLaunchTemplate(q)
	case "CreateFleet":
		body, aerr = e.createFleet(q, now)
	case "DescribeInstances":
		body, aerr = e.describeInstances(q, now)
	case "TerminateInstances":
		body, aerr = e.terminateInstances(q, now)
	case "CreateTags":
		body, aerr = e.createTags(q)
	case "DescribeImages":
		body, aerr = e.describeImages(q, now)
	default:
		aerr = &apiError{status: http.StatusBadRequest, code: "InvalidAction", message: fmt.Sprintf("The action %s is not valid for this web service.", req.action)}
	}
	if aerr != nil {
		return aerr
	}
	writeEC2Response(w, req, body)
	return nil
}

// writeEC2Response writes body's fields inside <{Action}Response xmlns=…><requestId>.
func writeEC2Response(w http.ResponseWriter, req *request, body any) {
	type response struct {
		XMLName   xml.Name
		XMLNS     string `xml:"xmlns,attr"`
		RequestID string `xml:"requestId"`
		Fields    string `xml:",innerxml"`
	}
	fields := ""
	if body != nil {
		// The body's own element is cut so that its children become the response's.
		var b strings.Builder
		if err := xml.NewEncoder(&b).EncodeElement(body, xml.StartElement{Name: xml.Name{Local: "body"}}); err != nil {
			http.Error(w, fmt.Sprintf("encoding response, %v", err), http.StatusInternalServerError)
			return
		}
		fields = strings.TrimSuffix(strings.TrimPrefix(b.String(), "<body>"), "</body>")
	}
	writeXML(w, http.StatusOK, response{XMLName: xml.Name{Local: req.action + "Response"}, XMLNS: ec2XMLNS, RequestID: req.requestID, Fields: fields})
}

func writeEC2Error(w http.ResponseWriter, req *request, aerr *apiError) {
	type xmlError struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	type errorResponse struct {
		XMLName   xml.Name   `xml:"Response"`
		Errors    []xmlError `xml:"Errors>Error"`
		RequestID string     `xml:"RequestID"`
	}
	writeXML(w, aerr.status, errorResponse{Errors: []xmlError{{Code: aerr.code, Message: aerr.message}}, RequestID: req.requestID})
}

func errEC2(code, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: code, message: fmt.Sprintf(format, args...)}
}

func errEC2InvalidParameter(format string, args ...any) *apiError {
	return errEC2("InvalidParameterValue", format, args...)
}

// ec2Query reads a request's parameters below a prefix ("" for the top level,
// "LaunchTemplateConfigs.1." for a nested structure).
type ec2Query struct {
	form   url.Values
	prefix string
}

func (q ec2Query) str(name string) string { return q.form.Get(q.prefix + name) }

func (q ec2Query) has(name string) bool {
	key := q.prefix + name
	if _, ok := q.form[key]; ok {
		return true
	}
	for k := range q.form {
		if strings.HasPrefix(k, key+".") {
			return true
		}
	}
	return false
}

// sub is the structure Name.
func (q ec2Query) sub(name string) ec2Query {
	return ec2Query{form: q.form, prefix: q.prefix + name + "."}
}

// list is the flattened list of structures Name.1, Name.2, …
func (q ec2Query) list(name string) []ec2Query {
	var out []ec2Query
	for i := 1; q.has(name + "." + strconv.Itoa(i)); i++ {
		out = append(out, q.sub(name+"."+strconv.Itoa(i)))
	}
	return out
}

// strs is the flattened list of strings Name.1, Name.2, …
func (q ec2Query) strs(name string) []string {
	var out []string
	for _, item := range q.list(name) {
		out = append(out, strings.TrimSuffix(item.prefix, "."))
	}
	for i, key := range out {
		out[i] = q.form.Get(key)
	}
	return out
}

func (q ec2Query) int(name string, def int) (int, *apiError) {
	v := q.str(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, errEC2InvalidParameter("Value (%s) for parameter %s is invalid. Expected an integer.", v, name)
	}
	return n, nil
}

func (q ec2Query) time(name string) (time.Time, *apiError) {
	v := q.str(name)
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, errEC2InvalidParameter("Value (%s) for parameter %s is invalid. Expected a timestamp.", v, name)
	}
	return t, nil
}

// tags reads a flattened Tag list (Tag.N.Key, Tag.N.Value).
func (q ec2Query) tags(name string) map[string]string {
	out := map[string]string{}
	for _, t := range q.list(name) {
		out[t.str("Key")] = t.str("Value")
	}
	return out
}

// tagSpecifications reads TagSpecification.N.{ResourceType,Tag.M} into tags by resource type.
func (q ec2Query) tagSpecifications() map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, spec := range q.list("TagSpecification") {
		rt := spec.str("ResourceType")
		if out[rt] == nil {
			out[rt] = map[string]string{}
		}
		for k, v := range spec.tags("Tag") {
			out[rt][k] = v
		}
	}
	return out
}

// filter is one of a Describe call's Filter.N: a resource matches when the named attribute
// equals any of the values, which may use the * and ? wildcards as EC2 allows.
type filter struct {
	name     string
	patterns []*regexp.Regexp
}

func (q ec2Query) filters(supported ...string) ([]filter, *apiError) {
	var out []filter
	for _, f := range q.list("Filter") {
		name := f.str("Name")
		if !strings.HasPrefix(name, "tag:") && name != "tag-key" && !slices.Contains(supported, name) {
			return nil, errEC2("InvalidParameterValue", "The filter '%s' is invalid", name)
		}
		flt := filter{name: name}
		for _, v := range f.strs("Value") {
			pattern := strings.NewReplacer(`\*`, ".*", `\?`, ".").Replace(regexp.QuoteMeta(v))
			flt.patterns = append(flt.patterns, regexp.MustCompile("^"+pattern+"$"))
		}
		out = append(out, flt)
	}
	return out, nil
}

func (f filter) matchesAny(values ...string) bool {
	for _, v := range values {
		for _, p := range f.patterns {
			if p.MatchString(v) {
				return true
			}
		}
	}
	return false
}

// matchFilters reports whether a resource passes every filter. attribute returns the
// resource's values for a filter name; tag:<key> and tag-key are answered from tags.
func matchFilters(filters []filter, tags map[string]string, attribute func(name string) []string) bool {
	for _, f := range filters {
		var values []string
		switch {
		case strings.HasPrefix(f.name, "tag:"):
			if v, ok := tags[strings.TrimPrefix(f.name, "tag:")]; ok {
				values = []string{v}
			}
		case f.name == "tag-key":
			for k := range tags {
				values = append(values, k)
			}
		default:
			values = attribute(f.name)
		}
		if !f.matchesAny(values...) {
			return false
		}
	}
	return true
}

// page cuts the items (sorted by key) to one page of at most MaxResults, starting at
// NextToken, and returns the token of the next page. maxResults bounds MaxResults as the
// call documents; 0 for def means "all" when MaxResults is absent.
func page[T any](q ec2Query, items []T, key func(T) string, minResults, maxResults, def int) ([]T, string, *apiError) {
	limit, aerr := q.int("MaxResults", def)
	if aerr != nil {
		return nil, "", aerr
	}
	if q.str("MaxResults") != "" && (limit < minResults || limit > maxResults) {
		return nil, "", errEC2InvalidParameter("Value ( %d ) for parameter maxResults is invalid. Expecting a value between %d and %d.", limit, minResults, maxResults)
	}
	if tok := q.str("NextToken"); tok != "" {
		start, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil {
			return nil, "", errEC2("InvalidNextToken", "The specified token %s is invalid.", tok)
		}
		i, _ := slices.BinarySearchFunc(items, string(start), func(item T, k string) int { return strings.Compare(key(item), k) })
		items = items[i:]
	}
	if limit == 0 || len(items) <= limit {
		return items, "", nil
	}
	return items[:limit], base64.RawURLEncoding.EncodeToString([]byte(key(items[limit]))), nil
}

// xmlItems is an EC2 list: <name><item>…</item></name>.
type xmlItems[T any] struct {
	Items []T `xml:"item"`
}

func items[T any](v []T) *xmlItems[T] {
	if len(v) == 0 {
		return nil
	}
	return &xmlItems[T]{Items: v}
}

type ec2Tag struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

func tagSet(tags map[string]string) *xmlItems[ec2Tag] {
	var out []ec2Tag
	for _, k := range sortedKeys(tags) {
		out = append(out, ec2Tag{Key: k, Value: tags[k]})
	}
	return items(out)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
