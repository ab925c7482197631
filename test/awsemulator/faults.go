package awsemulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// FaultKind is what an injected fault does to a matching request.
type FaultKind string

const (
	// FaultThrottle answers with the service's throttling error, which the SDK retries.
	FaultThrottle FaultKind = "throttle"
	// FaultServerError answers 500 InternalFailure, which the SDK retries.
	FaultServerError FaultKind = "server-error"
	// FaultAccessDenied answers the service's access-denied error.
	FaultAccessDenied FaultKind = "access-denied"
	// FaultLatency delays the request by Latency, then serves it (or the next matching fault).
	FaultLatency FaultKind = "latency"
)

// Fault describes requests to disturb. Empty Service/Action match any.
type Fault struct {
	// Service is the SigV4 signing name: autoscaling, eks, sqs, monitoring, ec2, ssm, pricing.
	Service string    `json:"service,omitempty"`
	Action  string    `json:"action,omitempty"`
	Kind    FaultKind `json:"kind"`
	// Times is how many matching requests are affected; 0 means until cleared.
	Times   int      `json:"times,omitempty"`
	Latency Duration `json:"latency,omitempty"`
}

// Duration is a time.Duration written as a Go duration string ("250ms") in JSON.
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"250ms\", %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

func (f Fault) validate() error {
	switch f.Kind {
	case FaultThrottle, FaultServerError, FaultAccessDenied:
	case FaultLatency:
		if f.Latency <= 0 {
			return fmt.Errorf("latency fault needs a positive latency")
		}
	default:
		return fmt.Errorf("unknown fault kind %q (throttle, server-error, access-denied, latency)", f.Kind)
	}
	if f.Times < 0 {
		return fmt.Errorf("times must be >= 0")
	}
	return nil
}

type activeFault struct {
	Fault
	remaining int // meaningful when Times > 0
	hits      int
}

// InjectFault adds a fault; faults are consulted in the order added.
func (e *Emulator) InjectFault(f Fault) error {
	if err := f.validate(); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.faults = append(e.faults, &activeFault{Fault: f, remaining: f.Times})
	return nil
}

// ClearFaults removes every injected fault.
func (e *Emulator) ClearFaults() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.faults = nil
}

// FaultHits reports how many requests each injected fault has affected, in order.
func (e *Emulator) FaultHits() []int {
	e.mu.Lock()
	defer e.mu.Unlock()
	hits := make([]int, len(e.faults))
	for i, f := range e.faults {
		hits[i] = f.hits
	}
	return hits
}

// takeFault applies latency faults and returns the error of the first
// matching error fault, consuming one use of each fault it applies.
func (e *Emulator) takeFault(req *request, r *http.Request) *apiError {
	var delay time.Duration
	var result *apiError
	e.mu.Lock()
	for _, f := range e.faults {
		if (f.Service != "" && f.Service != req.service) || (f.Action != "" && f.Action != req.action) {
			continue
		}
		if f.Times > 0 && f.remaining == 0 {
			continue
		}
		if f.Kind != FaultLatency && result != nil {
			continue
		}
		f.hits++
		if f.Times > 0 {
			f.remaining--
		}
		switch f.Kind {
		case FaultLatency:
			delay += time.Duration(f.Latency)
		case FaultThrottle:
			result = throttleError(req.service)
		case FaultServerError:
			result = &apiError{status: http.StatusInternalServerError, code: "InternalFailure", message: "The request processing has failed because of an unknown error, exception or failure (injected).", server: true}
		case FaultAccessDenied:
			result = accessDeniedError(req, e.opts.AccountID)
		}
	}
	e.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
		}
	}
	return result
}

// throttleError is each service's own throttling error; every code here is in
// the SDK's list of retryable throttle codes.
func throttleError(service string) *apiError {
	msg := "Rate exceeded (injected)."
	switch service {
	case serviceEKS:
		return &apiError{status: http.StatusTooManyRequests, code: "ThrottlingException", message: msg}
	case serviceSQS:
		return &apiError{status: http.StatusBadRequest, code: "ThrottlingException", queryCode: "RequestThrottled", message: msg}
	case serviceEC2:
		return &apiError{status: http.StatusServiceUnavailable, code: "RequestLimitExceeded", message: "Request limit exceeded (injected)."}
	default:
		return &apiError{status: http.StatusBadRequest, code: "Throttling", message: msg}
	}
}

func accessDeniedError(req *request, account string) *apiError {
	action := req.service + ":" + req.action
	if req.service == serviceCloudWatch {
		action = "cloudwatch:" + req.action
	}
	msg := fmt.Sprintf("User: arn:aws:sts::%s:assumed-role/karpenter/emulated is not authorized to perform: %s because no identity-based policy allows the %s action (injected)", account, action, action)
	switch req.service {
	case serviceEKS:
		return &apiError{status: http.StatusForbidden, code: "AccessDeniedException", message: msg}
	case serviceSQS:
		return &apiError{status: http.StatusForbidden, code: "AccessDeniedException", queryCode: "AccessDenied", message: msg}
	case serviceEC2:
		return &apiError{status: http.StatusForbidden, code: "UnauthorizedOperation", message: "You are not authorized to perform this operation (injected)."}
	default:
		return &apiError{status: http.StatusForbidden, code: "AccessDenied", message: msg}
	}
}
