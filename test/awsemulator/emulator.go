// Package awsemulator is an in-memory AWS endpoint that speaks the real wire
// protocols of exactly the calls Karpenter makes, so that the real
// aws-sdk-go-v2 clients can be exercised over HTTP with no cloud account:
//
//   - Auto Scaling (awsquery, XML): DescribeAutoScalingGroups (paginated),
//     SetDesiredCapacity, UpdateAutoScalingGroup.
//   - EKS (restJson1): DescribeCluster, ListNodegroups, DescribeNodegroup,
//     UpdateNodegroupConfig, DescribeUpdate.
//   - SQS (awsJson1_0): CreateQueue, GetQueueUrl, GetQueueAttributes,
//     SendMessage, ReceiveMessage, DeleteMessage, PurgeQueue.
//   - CloudWatch (Smithy RPC v2 CBOR): GetMetricData for the AWS/SQS queue metrics.
//   - EC2 (ec2query, XML): DescribeInstanceTypes, DescribeInstanceTypeOfferings,
//     DescribeSpotPriceHistory, DescribeSubnets, DescribeSecurityGroups,
//     DescribeLaunchTemplates, CreateLaunchTemplate, DeleteLaunchTemplate,
//     CreateFleet (instant), DescribeInstances, TerminateInstances, CreateTags, DescribeImages;
//     paginated and filtered as EC2 documents.
//   - SSM (awsJson1_1): GetParameter, with the public AMI parameters EC2NodeClass aliases read
//     (Amazon Linux 2023 and 2, Bottlerocket, Windows; latest and pinned releases).
//   - Pricing (awsJson1_1): GetProducts, EC2 price lists.
//   - IAM (awsquery, XML): GetRole, CreateInstanceProfile, GetInstanceProfile,
//     AddRoleToInstanceProfile, RemoveRoleFromInstanceProfile, TagInstanceProfile,
//     DeleteInstanceProfile.
//
// Instance types and prices come from a catalogue generated from the
// ec2instances.info dataset (hack/catalogue, make catalogue): hundreds of real
// types with their vCPUs, memory, architectures, ENI limits and regional
// on-demand and spot prices.
//
// All services share one endpoint (AWS_ENDPOINT_URL); requests are routed by
// protocol markers and by the SigV4 credential scope. Signatures are not
// verified. Time is simulated with an injectable clock: instances launch
// Pending and become InService (EC2: pending, running) after a delay, terminate
// through Terminating (EC2: shutting-down, terminated), and EKS updates complete
// after a delay. Faults (throttling, 5xx, latency, hangs, access denied, and EC2
// capacity errors per instance type, zone and capacity type) can be injected.
// State is seeded from a file or through the admin API under /_emulator/.
package awsemulator

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Options configure an Emulator. Zero delays make transitions immediate.
type Options struct {
	// Clock drives simulated time; defaults to the real clock.
	Clock clock.PassiveClock
	// Region and AccountID appear in ARNs and URLs; default us-west-2 / 123456789012.
	Region    string
	AccountID string
	// PendingDelay is how long a launched instance stays Pending before InService.
	PendingDelay time.Duration
	// TerminatingDelay is how long a terminating instance stays Terminating before it is gone.
	TerminatingDelay time.Duration
	// AddressOnlyWhenRunning hides a pending EC2 instance's private IP and DNS name until it
	// runs. EC2 assigns both at launch; this is for testing clients that must wait for them.
	AddressOnlyWhenRunning bool
	// EKSUpdateDelay is how long an EKS node group update stays InProgress.
	EKSUpdateDelay time.Duration
}

// Emulator is an http.Handler serving the AWS APIs and the admin API.
type Emulator struct {
	opts  Options
	admin http.Handler

	mu             sync.Mutex
	groups         map[string]*autoScalingGroup
	nodeGroups     map[string]*eksNodeGroup // by cluster/name
	clusters       map[string]*SeedEKSCluster
	queues         map[string]*queue
	faults         []*activeFault
	lastFaultID    FaultID
	nextInstanceID uint64
	nextRequestID  uint64
	nextID         uint64

	// EC2, SSM and Pricing.
	started        time.Time // when the emulator's spot prices were published
	catalogue      ec2Catalogue
	subnets        map[string]*subnet
	securityGroups map[string]*securityGroup
	// IAM: roles and instance profiles by lower-cased name (IAM names ignore case).
	roles            map[string]*iamRole
	instanceProfiles map[string]*iamInstanceProfile
	// images are the AMIs by id: Amazon's public ones and the seeded.
	images          map[string]*image
	launchTemplates map[string]*launchTemplate // by id
	instances       map[string]*ec2Instance    // free-standing instances by id
	fleets          map[string]*fleet          // by client token
	fleetRequests   []FleetRequest
	terminations    []TerminationRequest
	ssmParameters   map[string]string
}

// New returns an empty emulator.
func New(opts Options) *Emulator {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Region == "" {
		opts.Region = "us-west-2"
	}
	if opts.AccountID == "" {
		opts.AccountID = "123456789012"
	}
	catalogue, err := DefaultCatalogue()
	if err != nil {
		// The catalogue is embedded at build time; the tests keep it parseable.
		panic(fmt.Sprintf("awsemulator: the embedded catalogue is corrupt, %v", err))
	}
	e := &Emulator{
		opts:           opts,
		groups:         map[string]*autoScalingGroup{},
		nodeGroups:     map[string]*eksNodeGroup{},
		clusters:       map[string]*SeedEKSCluster{},
		queues:         map[string]*queue{},
		started:        opts.Clock.Now(),
		catalogue:      newEC2Catalogue(catalogue, opts.Region),
		subnets:        map[string]*subnet{},
		securityGroups: map[string]*securityGroup{},

		roles:            map[string]*iamRole{},
		instanceProfiles: map[string]*iamInstanceProfile{},
		launchTemplates:  map[string]*launchTemplate{},
		instances:        map[string]*ec2Instance{},
		fleets:           map[string]*fleet{},
	}
	e.images, e.ssmParameters = publicAMIs(opts.Region)
	e.admin = e.adminHandler()
	return e
}

// Service signing names, as they appear in the SigV4 credential scope.
const (
	serviceAutoScaling = "autoscaling"
	serviceEKS         = "eks"
	serviceSQS         = "sqs"
	serviceCloudWatch  = "monitoring"
	serviceEC2         = "ec2"
	serviceSSM         = "ssm"
	servicePricing     = "pricing"
	serviceIAM         = "iam"
)

// request is an incoming AWS API call after routing.
type request struct {
	service   string
	action    string
	http      *http.Request
	body      []byte
	form      url.Values // awsquery and ec2query only
	requestID string
}

const maxBodyBytes = 8 << 20

var credentialScope = regexp.MustCompile(`Credential=[^/]+/\d{8}/[^/]+/([^/]+)/aws4_request`)

func (e *Emulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, adminPrefix) {
		e.admin.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes))
	if err != nil {
		http.Error(w, fmt.Sprintf("reading request body, %v", err), http.StatusBadRequest)
		return
	}
	req := &request{http: r, body: body, requestID: e.newRequestID()}
	if err := route(req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("X-Amzn-RequestId", req.requestID)

	handle, writeErr := e.handlerFor(req)
	if fault := e.takeFault(req, r); fault != nil {
		writeErr(w, req, fault)
		return
	}
	if aerr := handle(w, req); aerr != nil {
		writeErr(w, req, aerr)
	}
}

type (
	handlerFunc    func(http.ResponseWriter, *request) *apiError
	errorWriteFunc func(http.ResponseWriter, *request, *apiError)
)

func (e *Emulator) handlerFor(req *request) (handlerFunc, errorWriteFunc) {
	switch req.service {
	case serviceAutoScaling:
		return e.serveAutoScaling, writeQueryError
	case serviceEKS:
		return e.serveEKS, writeRESTJSONError
	case serviceSQS:
		return e.serveSQS, writeSQSError
	case serviceEC2:
		return e.serveEC2, writeEC2Error
	case serviceSSM:
		return e.serveSSM, writeJSON11Error
	case servicePricing:
		return e.servePricing, writeJSON11Error
	case serviceIAM:
		return e.serveIAM, writeQueryError
	default:
		return e.serveCloudWatch, writeCBORError
	}
}

// route identifies the service and operation the way AWS front ends do: by
// the protocol's own markers, falling back to the SigV4 scope.
func route(req *request) error {
	r := req.http
	scope := ""
	if m := credentialScope.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
		scope = m[1]
	}
	switch {
	case r.Header.Get("Smithy-Protocol") == "rpc-v2-cbor":
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		if len(parts) != 4 || parts[0] != "service" || parts[2] != "operation" {
			return fmt.Errorf("malformed rpc-v2-cbor path %q", r.URL.Path)
		}
		if parts[1] != "GraniteServiceVersion20100801" {
			return fmt.Errorf("unsupported rpc-v2-cbor service %q", parts[1])
		}
		req.service, req.action = serviceCloudWatch, parts[3]
	case strings.HasPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS."):
		req.service, req.action = serviceSQS, strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS.")
	case strings.HasPrefix(r.Header.Get("X-Amz-Target"), "AmazonSSM."):
		req.service, req.action = serviceSSM, strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AmazonSSM.")
	case strings.HasPrefix(r.Header.Get("X-Amz-Target"), "AWSPriceListService."):
		req.service, req.action = servicePricing, strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AWSPriceListService.")
	case strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded"):
		form, err := url.ParseQuery(string(req.body))
		if err != nil {
			return fmt.Errorf("parsing query body, %w", err)
		}
		req.form = form
		req.action = form.Get("Action")
		switch {
		case scope == serviceAutoScaling || form.Get("Version") == "2011-01-01":
			req.service = serviceAutoScaling
		case scope == serviceEC2 || form.Get("Version") == ec2Version:
			req.service = serviceEC2
		case scope == serviceIAM || form.Get("Version") == iamVersion:
			req.service = serviceIAM
		default:
			return fmt.Errorf("unsupported query service (scope %q, version %q)", scope, form.Get("Version"))
		}
	case scope == serviceEKS || strings.HasPrefix(r.URL.Path, "/clusters/"):
		req.service = serviceEKS
		req.action = eksOperation(r.Method, r.URL.Path)
	default:
		return fmt.Errorf("cannot tell which AWS service %s %s is for", r.Method, r.URL.Path)
	}
	// Restore the body for handlers that decode it themselves.
	r.Body = io.NopCloser(bytes.NewReader(req.body))
	return nil
}

func (e *Emulator) newRequestID() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.nextRequestID++
	return fmt.Sprintf("00000000-0000-4000-8000-%012x", e.nextRequestID)
}

// newID returns a fresh UUID-shaped identifier (deterministic, for reproducible runs).
// The caller holds e.mu.
func (e *Emulator) newID() string {
	e.nextID++
	return fmt.Sprintf("e0000000-0000-4000-8000-%012x", e.nextID)
}

// apiError is an AWS error before it is shaped for a protocol.
type apiError struct {
	status  int
	code    string // the service's error code, e.g. ValidationError
	message string
	// queryCode is the awsquery-compatible code JSON/CBOR services announce in
	// X-Amzn-Query-Error; defaults to code.
	queryCode string
	server    bool // fault is the server's rather than the sender's
}

func (a *apiError) fault() string {
	if a.server {
		return "Receiver"
	}
	return "Sender"
}

func (a *apiError) compatibleCode() string {
	if a.queryCode != "" {
		return a.queryCode
	}
	return a.code
}

func errValidation(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "ValidationError", message: fmt.Sprintf(format, args...)}
}

func errUnknownOperation(req *request) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "InvalidAction", message: fmt.Sprintf("The action %s is not valid for this web service (emulated: %s).", req.action, req.service)}
}
