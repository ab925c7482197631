package awsemulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// FaultKind is what an injected fault does to a matching request.
type FaultKind string

const (
	// FaultThrottle answers with the service's throttling error, which the SDK retries.
	FaultThrottle FaultKind = "throttle"
	// FaultServerError answers 500 with the service's internal error, which the SDK retries.
	FaultServerError FaultKind = "server-error"
	// FaultAccessDenied answers the service's access-denied error.
	FaultAccessDenied FaultKind = "access-denied"
	// FaultLatency delays the request by Latency, then serves it (or the next matching fault).
	FaultLatency FaultKind = "latency"
	// FaultHang holds the request without answering until the client gives up.
	FaultHang FaultKind = "hang"
	// FaultCapacity fails CreateFleet's launches in the matching pools (instance type, zone,
	// capacity type) with Code, reported per override in the response's Errors as EC2 does.
	// Times counts the launch attempts it fails; Service and Action do not apply.
	FaultCapacity FaultKind = "capacity"
)

// The capacity errors EC2 reports per override in CreateFleet's Errors.
var capacityErrorMessages = map[string]string{
	"InsufficientInstanceCapacity":      "We currently do not have sufficient %[1]s capacity in the Availability Zone you requested (%[2]s). Our system will be working on provisioning additional capacity. You can currently get %[1]s capacity by not specifying an Availability Zone in your request or choosing a different Availability Zone (injected).",
	"MaxSpotInstanceCountExceeded":      "Max spot instance count exceeded (injected).",
	"VcpuLimitExceeded":                 "You have requested more vCPU capacity than your current vCPU limit allows for the instance bucket that the specified instance type belongs to. Please visit http://aws.amazon.com/contact-us/ec2-request to request an adjustment to this limit (injected).",
	"UnfulfillableCapacity":             "Unable to fulfill capacity due to your request configuration. Please adjust your request and try again (injected).",
	"InsufficientFreeAddressesInSubnet": "There are not enough free addresses in the subnet to satisfy the requested number of instances (injected).",
}

// Fault describes requests to disturb. Empty Service/Action match any.
type Fault struct {
	// Service is the SigV4 signing name: autoscaling, eks, sqs, monitoring, ec2, ssm, pricing, iam.
	Service string    `json:"service,omitempty"`
	Action  string    `json:"action,omitempty"`
	Kind    FaultKind `json:"kind"`
	// Times is how many matching requests are affected; 0 means until cleared.
	Times   int      `json:"times,omitempty"`
	Latency Duration `json:"latency,omitempty"`

	// A capacity fault matches launches by instance type, zone and capacity type (on-demand
	// or spot); empty matches any. Code is an EC2 capacity error code, by default
	// InsufficientInstanceCapacity.
	InstanceType     string `json:"instanceType,omitempty"`
	AvailabilityZone string `json:"availabilityZone,omitempty"`
	CapacityType     string `json:"capacityType,omitempty"`
	Code             string `json:"code,omitempty"`
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
	if f.Kind != FaultCapacity && (f.InstanceType != "" || f.AvailabilityZone != "" || f.CapacityType != "" || f.Code != "") {
		return fmt.Errorf("instanceType, availabilityZone, capacityType and code apply to capacity faults only")
	}
	switch f.Kind {
	case FaultThrottle, FaultServerError, FaultAccessDenied, FaultHang:
	case FaultCapacity:
		if _, ok := capacityErrorMessages[f.Code]; !ok && f.Code != "" {
			return fmt.Errorf("unknown capacity error code %q (%s)", f.Code, strings.Join(sortedKeys(capacityErrorMessages), ", "))
		}
		if f.CapacityType != "" && f.CapacityType != capacityTypeOnDemand && f.CapacityType != capacityTypeSpot {
			return fmt.Errorf("capacityType must be on-demand or spot, not %q", f.CapacityType)
		}
	case FaultLatency:
		if f.Latency <= 0 {
			return fmt.Errorf("latency fault needs a positive latency")
		}
	default:
		return fmt.Errorf("unknown fault kind %q (throttle, server-error, access-denied, latency, hang, capacity)", f.Kind)
	}
	if f.Times < 0 {
		return fmt.Errorf("times must be >= 0")
	}
	return nil
}

type activeFault struct {
	Fault
	id        FaultID
	remaining int // meaningful when Times > 0
	hits      int
}

// FaultID names one injected fault, so that tests sharing an emulator count and remove their
// own faults without touching each other's.
type FaultID int

// InjectFault adds a fault; faults are consulted in the order added.
func (e *Emulator) InjectFault(f Fault) (FaultID, error) {
	if err := f.validate(); err != nil {
		return 0, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lastFaultID++
	e.faults = append(e.faults, &activeFault{Fault: f, id: e.lastFaultID, remaining: f.Times})
	return e.lastFaultID, nil
}

// RemoveFault removes one injected fault; removing it twice does nothing.
func (e *Emulator) RemoveFault(id FaultID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.faults = slices.DeleteFunc(e.faults, func(f *activeFault) bool { return f.id == id })
}

// ClearFaults removes every injected fault.
func (e *Emulator) ClearFaults() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.faults = nil
}

// FaultHits reports how many requests (or, for a capacity fault, launch attempts) one injected
// fault has affected; 0 once it was removed.
func (e *Emulator) FaultHits(id FaultID) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, f := range e.faults {
		if f.id == id {
			return f.hits
		}
	}
	return 0
}

// takeFault applies latency faults and returns the error of the first
// matching error fault, consuming one use of each fault it applies.
func (e *Emulator) takeFault(req *request, r *http.Request) *apiError {
	var delay time.Duration
	var result *apiError
	hang := false
	e.mu.Lock()
	for _, f := range e.faults {
		if f.Kind == FaultCapacity || (f.Service != "" && f.Service != req.service) || (f.Action != "" && f.Action != req.action) {
			continue
		}
		if f.Times > 0 && f.remaining == 0 {
			continue
		}
		if f.Kind != FaultLatency && (result != nil || hang) {
			continue
		}
		f.hits++
		if f.Times > 0 {
			f.remaining--
		}
		switch f.Kind {
		case FaultLatency:
			delay += time.Duration(f.Latency)
		case FaultHang:
			hang = true
		case FaultThrottle:
			result = throttleError(req.service)
		case FaultServerError:
			result = serverError(req.service)
		case FaultAccessDenied:
			result = accessDeniedError(req, e.opts.AccountID)
		}
	}
	e.mu.Unlock()
	if hang {
		<-r.Context().Done()
		return &apiError{status: http.StatusServiceUnavailable, code: "RequestTimeout", message: "The client gave up (injected hang).", server: true}
	}
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
		}
	}
	return result
}

// takeCapacityFault returns the capacity error of the first capacity fault matching a
// launch in a pool, consuming one of its uses. The caller holds e.mu.
func (e *Emulator) takeCapacityFault(instanceType, zone, capacityType string) *apiError {
	for _, f := range e.faults {
		if f.Kind != FaultCapacity || (f.Times > 0 && f.remaining == 0) ||
			(f.InstanceType != "" && f.InstanceType != instanceType) || (f.AvailabilityZone != "" && f.AvailabilityZone != zone) ||
			(f.CapacityType != "" && f.CapacityType != capacityType) {
			continue
		}
		f.hits++
		if f.Times > 0 {
			f.remaining--
		}
		code := orDefault(f.Code, "InsufficientInstanceCapacity")
		message := capacityErrorMessages[code]
		if code == "InsufficientInstanceCapacity" {
			message = fmt.Sprintf(message, instanceType, zone)
		}
		return errEC2(code, "%s", message)
	}
	return nil
}

// serverError is each service's own internal error; the SDK retries any 500.
func serverError(service string) *apiError {
	code := "InternalFailure"
	switch service {
	case serviceEC2:
		code = "InternalError"
	case serviceSSM:
		code = "InternalServerError"
	case servicePricing:
		code = "InternalErrorException"
	case serviceIAM:
		code = "ServiceFailure"
	}
	return &apiError{status: http.StatusInternalServerError, code: code, message: "The request processing has failed because of an unknown error, exception or failure (injected).", server: true}
}

// throttleError is each service's own throttling error; every code here is in
// the SDK's list of retryable throttle codes.
func throttleError(service string) *apiError {
	msg := "Rate exceeded (injected)."
	switch service {
	case serviceEKS:
		return &apiError{status: http.StatusTooManyRequests, code: "ThrottlingException", message: msg}
	case serviceSSM, servicePricing:
		return &apiError{status: http.StatusBadRequest, code: "ThrottlingException", message: msg}
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
	case serviceSSM, servicePricing:
		return &apiError{status: http.StatusBadRequest, code: "AccessDeniedException", message: msg}
	case serviceSQS:
		return &apiError{status: http.StatusForbidden, code: "AccessDeniedException", queryCode: "AccessDenied", message: msg}
	case serviceEC2:
		return &apiError{status: http.StatusForbidden, code: "UnauthorizedOperation", message: "You are not authorized to perform this operation (injected)."}
	default:
		return &apiError{status: http.StatusForbidden, code: "AccessDenied", message: msg}
	}
}
