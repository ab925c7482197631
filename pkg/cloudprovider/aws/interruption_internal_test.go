package aws

import (
	"testing"
	"time"
)

func TestInterruptionWaitSeconds(t *testing.T) {
	for _, tc := range []struct {
		callTimeout time.Duration
		want        int32
	}{
		{DefaultCallTimeout, 15},
		{time.Minute, 20},
		{10 * time.Second, 5},
		{time.Second, 1},
	} {
		if got := interruptionWaitSeconds(tc.callTimeout); got != tc.want {
			t.Errorf("interruptionWaitSeconds(%s) = %d, want %d", tc.callTimeout, got, tc.want)
		}
	}
}
