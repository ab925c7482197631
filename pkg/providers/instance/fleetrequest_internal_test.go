package instance

import (
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
)

func TestClientToken(t *testing.T) {
	if clientToken("", 0) != nil {
		t.Error("a launch without a key got a fixed token: two launches would be one")
	}
	a := sdkaws.ToString(clientToken("launch-1", 0))
	if a != sdkaws.ToString(clientToken("launch-1", 0)) {
		t.Error("a retried launch has a new token: it would launch twice")
	}
	// Parameters are no part of it: the same launch asked with other candidates is refused by
	// EC2 (IdempotentParameterMismatch), never launched again under a new token.
	for _, other := range []*string{clientToken("launch-2", 0), clientToken("launch-1", 1)} {
		if sdkaws.ToString(other) == a {
			t.Error("a different launch or call reuses a token: EC2 would answer with the other's instance")
		}
	}
	if len(a) > 64 {
		t.Errorf("token %q is longer than EC2's 64 characters", a)
	}
}
