package aws

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/smithy-go/middleware"
)

// DefaultCallTimeout bounds one AWS call, its retries included, when Options.CallTimeout is
// zero.
const DefaultCallTimeout = 30 * time.Second

// withCallTimeout gives every operation of a client a deadline, so that an endpoint that
// accepts a connection and never answers holds a reconciler for at most timeout, not forever.
// It runs first in the stack, before the retries, so the deadline bounds them too.
func withCallTimeout(timeout time.Duration) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("CallTimeout",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				callCtx, cancel := context.WithTimeout(ctx, timeout)
				defer cancel()
				out, metadata, err := next.HandleInitialize(callCtx, in)
				// Name the deadline only when it is ours, not the caller's.
				if err != nil && ctx.Err() == nil && errors.Is(callCtx.Err(), context.DeadlineExceeded) {
					err = fmt.Errorf("no answer within the AWS call timeout of %s, %w", timeout, err)
				}
				return out, metadata, err
			}), middleware.Before)
	}
}
