package consolidation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestDeletedMessage(t *testing.T) {
	for _, tc := range []struct {
		nodes  int
		saving float64
		want   string
	}{
		{1, 0.047, "Consolidation deleted the node: its pods fit on the other nodes, saving $0.0470/h"},
		{7, 0.3443, "Consolidation deleted the node and 6 more together: their pods fit on the remaining nodes, saving $0.3443/h in all"},
	} {
		decision := Decision{Action: Delete, Nodes: make([]*corev1.Node, tc.nodes), Saving: tc.saving}
		if got := deletedMessage(decision); got != tc.want {
			t.Errorf("%d nodes: %q, want %q", tc.nodes, got, tc.want)
		}
	}
}
