// Package events waits for the Events a controller records, for integration tests that assert
// what a user reading `kubectl get events` would see, and counts those a fake recorder holds.
package events

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/test/eventually"
)

// Wait waits for an Event of reason on the object named name whose message contains text; on a
// timeout it says the Events the object had.
func Wait(t testing.TB, reader client.Reader, name, reason, text string, options ...eventually.Option) {
	t.Helper()
	eventually.Holds(t, fmt.Sprintf("a %s Event on %s mentioning %q", reason, name, text), func() (bool, string, error) {
		var list corev1.EventList
		if err := reader.List(t.Context(), &list); err != nil {
			return false, "", err
		}
		var seen []string
		for _, e := range list.Items {
			if e.InvolvedObject.Name != name {
				continue
			}
			if e.Reason == reason && strings.Contains(e.Message, text) {
				return true, "", nil
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return false, strings.Join(seen, "; "), nil
	}, options...)
}

// Count takes the Events the fake recorder holds and counts those of the reason.
func Count(recorder *record.FakeRecorder, reason string) int {
	n := 0
	for {
		select {
		case event := <-recorder.Events:
			// "<type> <reason> <message>", as the fake recorder writes them.
			if fields := strings.Fields(event); len(fields) > 1 && fields[1] == reason {
				n++
			}
		default:
			return n
		}
	}
}
