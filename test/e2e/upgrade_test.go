package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/test/sandbox"
)

// preNodeClaimsCommit is the last commit of main before NodeClaims (issue 35), whose controller
// launched a Provisioner's nodes with no NodeClaim: the code the upgrade test upgrades from. It
// is pinned, not "the previous commit" or a tag: no release was tagged between, and any later
// commit already knows NodeClaims.
const preNodeClaimsCommit = "3519aeaaf28aae12420d0879ac841c248fa594ce"

// upgradeGrace is the garbage collection grace and consolidation minimum node age of the upgrade
// test's stack, which the old nodes outlive before the upgrade: as in a real cluster, nothing but
// their nodes (and then their NodeClaims) keeps their instances from being collected.
const upgradeGrace = 10 * time.Second

// TestUpgradeFromBeforeNodeClaimsDisruptsNothing upgrades a running stack as a user would: the
// controller of preNodeClaimsCommit, with the CRDs that commit shipped (no NodeClaim), has
// launched a Provisioner's nodes and their pods run; this tree's CRDs are applied (as
// docs/upgrading.md says, before the controller), then the controller is replaced (SIGTERM, this
// tree's started). Every node the old controller launched gets exactly one NodeClaim, which
// records its instance and node, owns the node and is Ready; no instance is launched or
// terminated, no node deleted, cordoned or tainted for disruption, no pod evicted or restarted; a
// later scale-up launches a NodeClaim as usual; and deleting a hydrated NodeClaim drains its node
// and terminates its instance once, as any NodeClaim's deletion does. The test runs on a stack of
// its own, started with the old commit's CRDs and controller; its admission webhook is this
// tree's throughout (it admits Provisioners and never acts on nodes).
func TestUpgradeFromBeforeNodeClaimsDisruptsNothing(t *testing.T) {
	t.Parallel()
	oldController, oldCRDs := buildControllerAt(t, preNodeClaimsCommit)
	s := startOwnStack(t, sandbox.Options{
		ControllerBinary: oldController, CRDDirectory: oldCRDs, GarbageCollectionGrace: upgradeGrace, ConsolidationMinNodeAge: upgradeGrace,
		// The old controller binds a pod to its node the moment the Node exists, and kwok
		// misses, now and then, a pod bound as it starts managing the node (the pod stays
		// Pending). Nominated, pods are bound by kube-scheduler once kwok has the node Ready.
		// Both controllers run with it: ReplaceController keeps the flags.
		ControllerArgs: []string{"--bind-pods=false"},
	})
	ctx := context.Background()
	err := s.Env.Client.Get(ctx, client.ObjectKey{Name: "nodeclaims.karpenter.sh"}, &apiextensionsv1.CustomResourceDefinition{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("the NodeClaim CRD before the upgrade: %v; want none, as %s shipped none", err, preNodeClaimsCommit[:7])
	}

	const name = "upgrade"
	provisioner := builders.Provisioner(builders.ProvisionerOptions{Name: name, Labels: map[string]string{"e2e.karpenter.sh/team": name}, Requirements: []v1alpha5.NodeSelectorRequirement{
		{Key: corev1.LabelInstanceTypeStable, Operator: "In", Values: []string{"m5.xlarge"}},
		{Key: corev1.LabelTopologyZone, Operator: "In", Values: []string{"us-west-2a"}},
	}})
	// Pods of 3 CPUs, one per m5.xlarge: three nodes.
	app := builders.Deployment(builders.DeploymentOptions{Name: name, Namespace: sandbox.Namespace, Replicas: 3, Pod: builders.PodOptions{
		Labels: map[string]string{"app": name}, NodeSelector: map[string]string{v1alpha5.ProvisionerNameLabelKey: name},
		Requests: builders.Resources("cpu", "3"),
	}})
	for _, object := range []client.Object{provisioner, app} {
		if err := s.Env.Client.Create(ctx, object); err != nil {
			t.Fatal(err)
		}
	}
	legacy := distinctNodes(t, waitAppOn(t, s, name, 3), 3)
	eventually.Holds(t, fmt.Sprintf("the old controller's three instances, each with its node, launched over %s ago", upgradeGrace), func() (bool, string, error) {
		ok, why, err := instancesMatchNodesOn(s, name, 3)
		for _, instance := range liveInstancesOn(s, name) {
			ok = ok && time.Since(instance.LaunchTime) > upgradeGrace
		}
		return ok, why, err
	}, eventually.Timeout(waitTimeout))
	pods := podUIDs(t, s, name)
	fleetCalls, terminationCalls := len(s.Emulator.FleetRequests()), len(s.Emulator.TerminationRequests())
	disrupted := watchDisruptions(t, s, name)

	crds := filepath.Join(repositoryRoot(t), "config", "crd")
	kubectlOn(t, s, "apply", "--server-side", "--force-conflicts", "-f", crds)
	kubectlOn(t, s, "wait", "--for=condition=Established", "--timeout=1m", "-f", crds)
	if err := s.ReplaceController(ctx, controllerBinary); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "each node the old controller launched owned by one Ready nodeclaim recording it", func() (bool, string, error) {
		return hydrated(s, name, legacy)
	}, eventually.Timeout(waitTimeout))
	checkUndisturbed(t, s, name, pods, fleetCalls, terminationCalls, disrupted)

	// A scale-up after the upgrade launches through a NodeClaim, as any launch does.
	scaled := app.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](4)
	if err := s.Env.Client.Patch(ctx, scaled, client.MergeFrom(app)); err != nil {
		t.Fatal(err)
	}
	waitAppOn(t, s, name, 4)
	eventually.Holds(t, "four Ready nodeclaims, one launched since the upgrade, each with its instance and node", func() (bool, string, error) {
		ok, why, err := nodeClaimsMatchInstancesOn(s, name)
		if err != nil {
			return false, "", err
		}
		list := &v1.NodeClaimList{}
		if err := s.Env.Client.List(ctx, list, client.MatchingLabels{v1alpha5.ProvisionerNameLabelKey: name}); err != nil {
			return false, "", err
		}
		ready := 0
		for _, nc := range list.Items {
			if nc.IsTrue(v1.ConditionTypeReady) {
				ready++
			}
		}
		launched := launchedInstancesOn(s, name, fleetCalls)
		return ok && len(list.Items) == 4 && ready == 4 && launched == 1,
			fmt.Sprintf("%s; %d nodeclaims, %d Ready; %d instances launched since the upgrade", why, len(list.Items), ready, launched), nil
	}, eventually.Timeout(waitTimeout))
	checkUndisturbed(t, s, name, pods, fleetCalls, terminationCalls, disrupted)

	// A hydrated NodeClaim is looked after like any other: deleting it drains its node and
	// terminates its instance, once, and its pod gets a new node.
	victim := legacy[0]
	list := &v1.NodeClaimList{}
	if err := s.Env.Client.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(list.Items, func(nc v1.NodeClaim) bool { return nc.Status.ProviderID == victim.Spec.ProviderID })
	if i < 0 {
		t.Fatalf("no nodeclaim records node %s's instance", victim.Name)
	}
	hydratedClaim := &list.Items[i]
	disrupted.stop()
	kubectlOn(t, s, "delete", "nodeclaim", hydratedClaim.Name, "--wait=false")
	eventually.Holds(t, "nodeclaim "+hydratedClaim.Name+" and node "+victim.Name+" gone, the instance terminated once", func() (bool, string, error) {
		claimErr := s.Env.Client.Get(ctx, client.ObjectKeyFromObject(hydratedClaim), &v1.NodeClaim{})
		nodeErr := s.Env.Client.Get(ctx, client.ObjectKeyFromObject(victim), &corev1.Node{})
		for _, err := range []error{claimErr, nodeErr} {
			if client.IgnoreNotFound(err) != nil {
				return false, "", err
			}
		}
		terminated := terminationsOn(s, instanceIDOf(victim))
		return apierrors.IsNotFound(claimErr) && apierrors.IsNotFound(nodeErr) && terminated == 1,
			fmt.Sprintf("nodeclaim: %v, node: %v, terminations %d", claimErr, nodeErr, terminated), nil
	}, eventually.Timeout(waitTimeout))
	waitAppOn(t, s, name, 4)
}

// buildControllerAt builds cmd/controller of a commit of this repository's history and returns it
// and the commit's CRD directory. The commit's tree (extractedTree) is built as sandbox.Build
// builds this one, so that its dependencies, the bulk of the build, come from the build cache
// this tree's build filled; offline: the commit's modules are among today's, in the module cache.
func buildControllerAt(t *testing.T, commit string) (controller, crds string) {
	t.Helper()
	tree := extractedTree(t, commit)
	begin := time.Now()
	controller = filepath.Join(t.TempDir(), "controller")
	build := environment.GoBuild(tree, "-o", controller, "./cmd/controller")
	build.Env = append(build.Env, "GOPROXY=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the controller of %s, %v\n%s", commit, err, out)
	}
	t.Logf("built the controller of %s in %s", commit[:7], time.Since(begin).Round(time.Millisecond))
	return controller, filepath.Join(tree, "config", "crd")
}

// extractedTree is the commit's tree, extracted with git archive once per machine into the user's
// cache directory, under the commit's name, so that it is not extracted again each run (built
// with -trimpath, its packages' compilation no longer depends on where it is). A tree is complete
// once renamed into place.
func extractedTree(t *testing.T, commit string) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(cache, "karpenter-e2e", "tree-"+commit)
	if _, err := os.Stat(tree); err == nil {
		return tree
	}
	if err := os.MkdirAll(filepath.Dir(tree), 0o750); err != nil {
		t.Fatal(err)
	}
	staging, err := os.MkdirTemp(filepath.Dir(tree), "staging-")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(staging) }()
	archive, extracted := filepath.Join(staging, "tree.tar"), filepath.Join(staging, "tree")
	root := repositoryRoot(t)
	gitArchive := exec.Command("git", "archive", "--output", archive, commit)
	gitArchive.Dir = root
	if _, err := gitArchive.CombinedOutput(); err != nil {
		// A shallow clone lacks the commit: its history is fetched from where it was cloned.
		unshallow := exec.Command("git", "fetch", "--quiet", "--unshallow")
		unshallow.Dir = root
		if out, err := unshallow.CombinedOutput(); err != nil {
			t.Fatalf("commit %s is not in this clone and fetching its history failed: %v\n%s", commit, err, out)
		}
		gitArchive = exec.Command("git", "archive", "--output", archive, commit)
		gitArchive.Dir = root
		if out, err := gitArchive.CombinedOutput(); err != nil {
			t.Fatalf("git archive %s, %v\n%s", commit, err, out)
		}
	}
	if err := os.Mkdir(extracted, 0o750); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("tar", "-xf", archive, "-C", extracted).CombinedOutput(); err != nil {
		t.Fatalf("extracting %s, %v\n%s", archive, err, out)
	}
	// Another run may have put it in place meanwhile: either tree is the commit's.
	if err := os.Rename(extracted, tree); err != nil {
		if _, statErr := os.Stat(tree); statErr != nil {
			t.Fatalf("putting the tree of %s in place, %v", commit, err)
		}
	}
	return tree
}

func repositoryRoot(t *testing.T) string {
	t.Helper()
	root, err := environment.RepositoryRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// startOwnStack starts a stack of the test's own, running this tree's webhook, stopped when the
// test ends; its logs are kept when the test fails.
func startOwnStack(t *testing.T, options sandbox.Options) *sandbox.Stack {
	t.Helper()
	dir, err := os.MkdirTemp("", "karpenter-e2e-"+strings.ToLower(t.Name())+"-")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	options.Dir, options.WebhookBinary, options.Logf = dir, webhookBinary, t.Logf
	s, err := sandbox.Start(ctx, options)
	if err != nil {
		t.Fatalf("starting the stack (logs kept in %s): %v", dir, err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Logf("stopping the stack: %v", err)
		}
		if t.Failed() {
			t.Logf("logs kept in %s", filepath.Join(dir, "logs"))
			return
		}
		_ = os.RemoveAll(dir)
	})
	return s
}

// podUIDs are the app's pods by name.
func podUIDs(t *testing.T, s *sandbox.Stack, app string) map[string]types.UID {
	t.Helper()
	podList := &corev1.PodList{}
	if err := s.Env.Client.List(context.Background(), podList, client.InNamespace(sandbox.Namespace), client.MatchingLabels{"app": app}); err != nil {
		t.Fatal(err)
	}
	uids := map[string]types.UID{}
	for _, pod := range podList.Items {
		uids[pod.Name] = pod.UID
	}
	return uids
}

// hydrated reports whether each node is owned by exactly one NodeClaim, which is Ready and
// records the node and its instance, and no other NodeClaim of the Provisioner exists.
func hydrated(s *sandbox.Stack, provisionerName string, legacy []*corev1.Node) (bool, string, error) {
	list := &v1.NodeClaimList{}
	if err := s.Env.Client.List(context.Background(), list, client.MatchingLabels{v1alpha5.ProvisionerNameLabelKey: provisionerName}); err != nil {
		return false, "", err
	}
	ok := len(list.Items) == len(legacy)
	seen := []string{fmt.Sprintf("%d nodeclaims", len(list.Items))}
	for _, old := range legacy {
		node := &corev1.Node{}
		if err := s.Env.Client.Get(context.Background(), client.ObjectKeyFromObject(old), node); err != nil {
			return false, "", err
		}
		var owners []types.UID
		for _, owner := range node.OwnerReferences {
			if owner.Kind == "NodeClaim" {
				owners = append(owners, owner.UID)
			}
		}
		claims := slices.DeleteFunc(slices.Clone(list.Items), func(nc v1.NodeClaim) bool { return nc.Status.ProviderID != node.Spec.ProviderID })
		if len(claims) != 1 || len(owners) != 1 {
			ok = false
			seen = append(seen, fmt.Sprintf("node %s: %d nodeclaims of its instance, owners %v", node.Name, len(claims), owners))
			continue
		}
		nc := claims[0]
		good := owners[0] == nc.UID && nc.Status.NodeName == node.Name && nc.IsTrue(v1.ConditionTypeReady)
		ok = ok && good
		seen = append(seen, fmt.Sprintf("node %s: nodeclaim %s owns it %t, records it %t, Ready %t",
			node.Name, nc.Name, owners[0] == nc.UID, nc.Status.NodeName == node.Name, nc.IsTrue(v1.ConditionTypeReady)))
	}
	return ok, strings.Join(seen, "; "), nil
}

// checkUndisturbed fails the test if, since the upgrade, an instance was launched or terminated
// for anything but a scale-up of the app, a pod of the app it had then is gone or replaced, or
// the watch saw a disruption.
func checkUndisturbed(t *testing.T, s *sandbox.Stack, app string, pods map[string]types.UID, fleetCalls, terminationCalls int, disrupted *disruptions) {
	t.Helper()
	now := podUIDs(t, s, app)
	for podName, uid := range pods {
		if now[podName] != uid {
			t.Errorf("pod %s (uid %s) is gone or replaced since the upgrade; pods now %v", podName, uid, now)
		}
	}
	if launched, scaledUp := launchedInstancesOn(s, app, fleetCalls), len(now)-len(pods); launched > scaledUp {
		t.Errorf("%d instances launched since the upgrade, want only the scale-up's %d", launched, scaledUp)
	}
	if calls := s.Emulator.TerminationRequests()[terminationCalls:]; len(calls) > 0 {
		t.Errorf("instances terminated since the upgrade: %+v", calls)
	}
	if seen := disrupted.seen(); len(seen) > 0 {
		t.Errorf("disruptions since the upgrade:\n%s", strings.Join(seen, "\n"))
	}
}

// disruptions are what a watch of the Provisioner's nodes and the app's pods saw that a user
// would call a disruption: a node deleted, being deleted, cordoned or tainted
// karpenter.sh/disrupted; a pod deleted, being deleted (an eviction) or restarted.
type disruptions struct {
	mu     sync.Mutex
	events []string

	cancel   context.CancelFunc
	watching sync.WaitGroup
}

// stop ends the watch.
func (d *disruptions) stop() {
	d.cancel()
	d.watching.Wait()
}

func (d *disruptions) add(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.events = append(d.events, fmt.Sprintf(format, args...))
}

func (d *disruptions) seen() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.events)
}

// watchDisruptions watches the Provisioner's nodes and the pods of its app (app=provisionerName)
// from now until it is stopped or the test ends.
func watchDisruptions(t *testing.T, s *sandbox.Stack, provisionerName string) *disruptions {
	t.Helper()
	clientset, err := kubernetes.NewForConfig(s.Env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &disruptions{cancel: cancel}
	t.Cleanup(d.stop)
	nodeSelector := metav1.ListOptions{LabelSelector: v1alpha5.ProvisionerNameLabelKey + "=" + provisionerName}
	nodeList, err := clientset.CoreV1().Nodes().List(ctx, nodeSelector)
	if err != nil {
		t.Fatal(err)
	}
	nodeSelector.ResourceVersion = nodeList.ResourceVersion
	nodeWatch, err := clientset.CoreV1().Nodes().Watch(ctx, nodeSelector)
	if err != nil {
		t.Fatal(err)
	}
	podSelector := metav1.ListOptions{LabelSelector: "app=" + provisionerName}
	podList, err := clientset.CoreV1().Pods(sandbox.Namespace).List(ctx, podSelector)
	if err != nil {
		t.Fatal(err)
	}
	podSelector.ResourceVersion = podList.ResourceVersion
	podWatch, err := clientset.CoreV1().Pods(sandbox.Namespace).Watch(ctx, podSelector)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []watch.Interface{nodeWatch, podWatch} {
		d.watching.Add(1)
		go func() {
			defer d.watching.Done()
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case event, open := <-w.ResultChan():
					if !open {
						d.add("a watch ended before the test did: what followed was not seen")
						return
					}
					recordIfDisruptive(d, event)
				}
			}
		}()
	}
	return d
}

// recordIfDisruptive records the event if it is a disruption.
func recordIfDisruptive(d *disruptions, event watch.Event) {
	switch object := event.Object.(type) {
	case *corev1.Node:
		switch {
		case event.Type == watch.Deleted:
			d.add("node %s deleted", object.Name)
		case object.DeletionTimestamp != nil:
			d.add("node %s being deleted", object.Name)
		case object.Spec.Unschedulable:
			d.add("node %s cordoned", object.Name)
		case slices.ContainsFunc(object.Spec.Taints, func(taint corev1.Taint) bool { return taint.Key == v1.DisruptedTaintKey }):
			d.add("node %s tainted %s", object.Name, v1.DisruptedTaintKey)
		}
	case *corev1.Pod:
		switch {
		case event.Type == watch.Deleted:
			d.add("pod %s deleted", object.Name)
		case object.DeletionTimestamp != nil:
			d.add("pod %s being deleted", object.Name)
		case slices.ContainsFunc(object.Status.ContainerStatuses, func(c corev1.ContainerStatus) bool { return c.RestartCount > 0 }):
			d.add("pod %s restarted", object.Name)
		}
	default:
		d.add("watch event %s: %v", event.Type, event.Object)
	}
}
