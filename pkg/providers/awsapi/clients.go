// Package awsapi is how the AWS providers call AWS: the SDK clients of a region, the mapping of
// failed calls to the cloudprovider's typed errors, and the tag that marks what a cluster owns.
package awsapi

import (
	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// Clients are the SDK clients of one region.
type Clients struct {
	AutoScaling *autoscaling.Client
	EKS         *eks.Client
	SQS         *sqs.Client
	CloudWatch  *cloudwatch.Client
	EC2         *ec2.Client
	SSM         *ssm.Client
	// IAM is global; the SDK resolves its one endpoint whatever the region.
	IAM *iam.Client
	// Pricing is served from PricingRegion whatever the region of the prices.
	Pricing *pricing.Client
}

// PricingRegion serves the Pricing API for every commercial region.
const PricingRegion = "us-east-1"

// NewClients builds the clients of region from cfg. Service clients resolve endpoint overrides
// (AWS_ENDPOINT_URL_<SERVICE>) from the loaded config themselves; only the region is set here.
func NewClients(cfg sdkaws.Config, region string) *Clients {
	return &Clients{
		AutoScaling: autoscaling.NewFromConfig(cfg, func(o *autoscaling.Options) { o.Region = region }),
		EKS:         eks.NewFromConfig(cfg, func(o *eks.Options) { o.Region = region }),
		SQS:         sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.Region = region }),
		CloudWatch:  cloudwatch.NewFromConfig(cfg, func(o *cloudwatch.Options) { o.Region = region }),
		EC2:         ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.Region = region }),
		SSM:         ssm.NewFromConfig(cfg, func(o *ssm.Options) { o.Region = region }),
		IAM:         iam.NewFromConfig(cfg, func(o *iam.Options) { o.Region = region }),
		Pricing:     pricing.NewFromConfig(cfg, func(o *pricing.Options) { o.Region = PricingRegion }),
	}
}

// ClientsFunc returns the clients of the region the providers work in. They are built on first
// use, so a provider is built without I/O, and a missing region fails each call, not the build.
type ClientsFunc func() (*Clients, error)
