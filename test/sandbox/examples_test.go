package sandbox

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"karpenter.sh/karpenter/pkg/test/manifests"
)

// upstreamGettingStarted is upstream's v1.14 getting-started NodePool and EC2NodeClass as its
// guide's step 12 writes them, kept with its source in pkg/apis/testdata.
const upstreamGettingStarted = "../../pkg/apis/testdata/upstream/website/content/en/v1.14/getting-started/getting-started-with-karpenter/scripts/step12-add-nodepool.sh.L2-L49.yaml"

// TestNodePoolExampleIsTheGuidesManifest: docs/examples/v1/nodepool.yaml is upstream's guide's
// manifest, object for object, with ${CLUSTER_NAME} and ${ALIAS_VERSION} filled in as the
// sandbox's: the docs and the story show what a user of upstream's guide applies.
func TestNodePoolExampleIsTheGuidesManifest(t *testing.T) {
	raw, err := os.ReadFile(filepath.FromSlash(upstreamGettingStarted))
	if err != nil {
		t.Fatal(err)
	}
	filled := strings.NewReplacer("${CLUSTER_NAME}", ClusterName, "${ALIAS_VERSION}", "latest").Replace(string(raw))
	want, err := manifests.DecodeAll(strings.NewReader(filled))
	if err != nil {
		t.Fatal(err)
	}
	got, err := NodePoolExample()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !reflect.DeepEqual(got, want) {
		t.Errorf("%s holds %d objects that differ from upstream's guide filled in for the sandbox:\n got %v\nwant %v", NodePoolExampleFile, len(got), got, want)
	}
}
