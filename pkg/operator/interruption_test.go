package operator

import (
	"context"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers"
)

// --interruption-queue builds the SQS queue before the manager; one that cannot be built stops
// the operator from starting (a queue without an instance provider is refused by
// controllers.Register, tested there).
func TestInterruptionQueueOption(t *testing.T) {
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/credentials")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for _, tc := range []struct{ queue, want string }{
		{"sqs.us-west-2.amazonaws.com", "the interruption queue must be an SQS queue name, URL or ARN"},
		{"arn:aws:sns:us-west-2:123456789012:topic", "building the interruption queue"},
	} {
		_, err := New(context.Background(), &rest.Config{Host: "http://127.0.0.1:1"}, Options{
			AWSRegion: "us-west-2", InterruptionQueue: tc.queue, SkipNameValidation: true,
			Controllers: controllers.Options{CloudProvider: cloudprovider.NewRegistry(), Clock: clock.RealClock{}, Enabled: []string{"interruption"}},
		})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("queue %s: %v, want an error containing %q", tc.queue, err, tc.want)
		}
	}
}
