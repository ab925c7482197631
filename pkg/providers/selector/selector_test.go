package selector_test

import (
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"

	"karpenter.sh/karpenter/pkg/providers/selector"
)

func filter(name, value string) ec2types.Filter {
	return ec2types.Filter{Name: sdkaws.String(name), Values: []string{value}}
}

var securityGroups = selector.Fields{Kind: "security groups", ID: "group-id", Name: "group-name"}

func TestSelectorFilters(t *testing.T) {
	for _, tc := range []struct {
		name   string
		term   selector.Term
		fields selector.Fields
		want   []ec2types.Filter
		err    string
	}{
		{name: "any value is tag-key, sorted by key", term: selector.Term{Tags: map[string]string{"kubernetes.io/cluster/demo": "*", "Name": "private"}}, fields: securityGroups,
			want: []ec2types.Filter{filter("tag:Name", "private"), filter("tag-key", "kubernetes.io/cluster/demo")}},
		{name: "id, name and tags together", term: selector.Term{ID: "sg-1", Name: "nodes", Tags: map[string]string{"a": "x"}}, fields: securityGroups,
			want: []ec2types.Filter{filter("group-id", "sg-1"), filter("group-name", "nodes"), filter("tag:a", "x")}},
		{name: "a field the kind has no filter for", term: selector.Term{Name: "private"}, fields: selector.Fields{Kind: "subnets", ID: "subnet-id"},
			err: `subnets are not selected by name (term name="private",)`},
		{name: "nothing to select by", term: selector.Term{Tags: map[string]string{}}, fields: securityGroups,
			err: "a selector term that selects by no tag, id or name would select every one of the account's security groups"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.term.Filters(tc.fields)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Errorf("Filters = %v, %v; want error %q", got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b ec2types.Filter) bool {
				return sdkaws.ToString(a.Name) == sdkaws.ToString(b.Name) && cmp.Equal(a.Values, b.Values)
			})); diff != "" {
				t.Errorf("Filters (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKey(t *testing.T) {
	// A provider block's selector is one term of tags: its key is the pairs, sorted.
	if got, want := selector.Key([]selector.Term{{Tags: map[string]string{"b": "2", "a": "1"}}}), `"a"="1","b"="2",`; got != want {
		t.Errorf("Key = %s, want %s", got, want)
	}
	if got, want := selector.Key([]selector.Term{{ID: "sg-1"}, {Name: "nodes"}}), `id="sg-1", or name="nodes",`; got != want {
		t.Errorf("Key = %s, want %s", got, want)
	}
	if got, want := selector.Key([]selector.Term{{Name: "al2023-*", Owner: "amazon"}}), `name="al2023-*",owner="amazon",`; got != want {
		t.Errorf("Key = %s, want %s", got, want)
	}
}
