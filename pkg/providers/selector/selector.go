// Package selector holds the terms AWS resources are selected by — subnets, security groups,
// AMIs — as EC2NodeClass's selector terms spell them, and the EC2 filters they make.
package selector

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// AnyValue as a tag's value matches every value of its key.
const AnyValue = "*"

// Term selects the resources that match all of its fields; a list of terms selects what any
// of them selects.
type Term struct {
	// Tags must all match; AnyValue matches any value of its key.
	Tags map[string]string
	// ID is the resource's id, e.g. subnet-0123456789abcdef0.
	ID string
	// Name is the resource's name, where it has one (security groups, AMIs).
	Name string
	// Owner is the account (id or alias: self, amazon, aws-marketplace) that owns the
	// resource, for AMIs: not a filter but the owners DescribeImages searches.
	Owner string
}

// Fields name a kind of resource's EC2 filters and how errors name the kind.
type Fields struct {
	// Kind names the resources in errors, e.g. "subnets".
	Kind string
	// ID and Name are the filters on the resource's id and name; "" when the resource is not
	// selected by that.
	ID, Name string
}

// Filters are the term's EC2 filters: the id's, the name's, then each tag's (tag-key for
// AnyValue, tag:<key> otherwise) sorted by key. A term that selects by nothing would select
// every resource of the account, and one that selects by a field the kind has no filter for
// would select by less than it says: both are errors.
func (t Term) Filters(fields Fields) ([]ec2types.Filter, error) {
	var filters []ec2types.Filter
	for _, f := range []struct{ filter, value, field string }{{fields.ID, t.ID, "id"}, {fields.Name, t.Name, "name"}} {
		if f.value == "" {
			continue
		}
		if f.filter == "" {
			return nil, fmt.Errorf("%s are not selected by %s (term %s)", fields.Kind, f.field, t)
		}
		filters = append(filters, ec2types.Filter{Name: sdkaws.String(f.filter), Values: []string{f.value}})
	}
	filters = append(filters, TagFilters(t.Tags)...)
	if len(filters) == 0 {
		return nil, errors.New("a selector term that selects by no tag, id or name would select every one of the account's " + fields.Kind)
	}
	return filters, nil
}

// TagFilters turn tags into EC2 filters, sorted by key: a value AnyValue matches any value of
// its key (tag-key), any other value exactly (tag:<key>).
func TagFilters(tags map[string]string) []ec2types.Filter {
	var filters []ec2types.Filter
	for _, key := range slices.Sorted(maps.Keys(tags)) {
		if tags[key] == AnyValue {
			filters = append(filters, ec2types.Filter{Name: sdkaws.String("tag-key"), Values: []string{key}})
		} else {
			filters = append(filters, ec2types.Filter{Name: sdkaws.String("tag:" + key), Values: []string{tags[key]}})
		}
	}
	return filters
}

// String is the term's fields, each "key"="value", (tags sorted), for cache keys and errors.
func (t Term) String() string {
	var b strings.Builder
	if t.ID != "" {
		fmt.Fprintf(&b, "id=%q,", t.ID)
	}
	if t.Name != "" {
		fmt.Fprintf(&b, "name=%q,", t.Name)
	}
	if t.Owner != "" {
		fmt.Fprintf(&b, "owner=%q,", t.Owner)
	}
	for _, key := range slices.Sorted(maps.Keys(t.Tags)) {
		fmt.Fprintf(&b, "%q=%q,", key, t.Tags[key])
	}
	return b.String()
}

// Key names a list of terms, for cache keys and errors: its terms' strings, joined by " or ".
func Key(terms []Term) string {
	var keys []string
	for _, t := range terms {
		keys = append(keys, t.String())
	}
	return strings.Join(keys, " or ")
}
