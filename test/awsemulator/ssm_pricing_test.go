package awsemulator_test

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"testing"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"karpenter.sh/karpenter/test/awsemulator"
)

func TestSSMPublishesTheEKSOptimizedAMIs(t *testing.T) {
	_, cfg := start(t, awsemulator.Options{}, `ssmParameters: {/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id: ami-0seeded}`)
	client := ssm.NewFromConfig(cfg)
	ctx := context.Background()
	get := func(name string) (string, error) {
		out, err := client.GetParameter(ctx, &ssm.GetParameterInput{Name: sdkaws.String(name)})
		if err != nil {
			return "", err
		}
		return sdkaws.ToString(out.Parameter.Value), nil
	}

	ami := regexp.MustCompile(`^ami-[0-9a-f]{17}$`)
	seen := map[string]string{}
	for _, name := range []string{
		"/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/recommended/image_id",
		"/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/arm64/standard/recommended/image_id",
		"/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/arm64/standard/recommended/image_id",
		"/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/standard/recommended/image_id",
		"/aws/service/eks/optimized-ami/1.32/amazon-linux-2/recommended/image_id",
		"/aws/service/eks/optimized-ami/1.32/amazon-linux-2-arm64/recommended/image_id",
	} {
		v, err := get(name)
		if err != nil || !ami.MatchString(v) {
			t.Errorf("%s = %q, %v", name, v, err)
		}
		if other, dup := seen[v]; dup {
			t.Errorf("%s and %s share %s", name, other, v)
		}
		seen[v] = name
		if again, _ := get(name); again != v {
			t.Errorf("%s changed from %s to %s", name, v, again)
		}
	}
	if v, err := get("/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id"); err != nil || v != "ami-0seeded" {
		t.Errorf("seeded parameter = %q, %v", v, err)
	}
	// As AWS: no Amazon Linux 2 AMIs after 1.32, nothing for versions EKS no longer serves.
	for _, name := range []string{
		"/aws/service/eks/optimized-ami/1.20/amazon-linux-2/recommended/image_id",
		"/aws/service/eks/optimized-ami/1.33/amazon-linux-2/recommended/image_id",
		"/aws/service/eks/optimized-ami/1.34/amazon-linux-2-arm64/recommended/image_id",
	} {
		_, err := get(name)
		var notFound *ssmtypes.ParameterNotFound
		if !errors.As(err, &notFound) {
			t.Errorf("%s: %v, want ParameterNotFound", name, err)
		}
	}
}

func TestPricingGetProducts(t *testing.T) {
	e, cfg := start(t, awsemulator.Options{}, "")
	cfg.Region = "us-east-1"
	client := pricing.NewFromConfig(cfg)
	ctx := context.Background()
	term := func(field, value string) pricingtypes.Filter {
		return pricingtypes.Filter{Type: pricingtypes.FilterTypeTermMatch, Field: sdkaws.String(field), Value: sdkaws.String(value)}
	}
	filters := []pricingtypes.Filter{
		term("regionCode", "us-west-2"), term("operatingSystem", "Linux"), term("tenancy", "Shared"),
		term("preInstalledSw", "NA"), term("capacitystatus", "Used"),
	}

	prices := map[string]float64{}
	pages := 0
	for p := pricing.NewGetProductsPaginator(client, &pricing.GetProductsInput{ServiceCode: sdkaws.String("AmazonEC2"), Filters: filters, FormatVersion: sdkaws.String("aws_v1")}); p.HasMorePages(); {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, doc := range out.PriceList {
			var entry struct {
				Product struct {
					Attributes map[string]string `json:"attributes"`
				} `json:"product"`
				Terms struct {
					OnDemand map[string]struct {
						PriceDimensions map[string]struct {
							Unit         string            `json:"unit"`
							PricePerUnit map[string]string `json:"pricePerUnit"`
						} `json:"priceDimensions"`
					} `json:"OnDemand"`
				} `json:"terms"`
			}
			if err := json.Unmarshal([]byte(doc), &entry); err != nil {
				t.Fatalf("price list entry %s: %v", doc, err)
			}
			for _, term := range entry.Terms.OnDemand {
				for _, d := range term.PriceDimensions {
					v, err := strconv.ParseFloat(d.PricePerUnit["USD"], 64)
					if err != nil || d.Unit != "Hrs" {
						t.Errorf("%s: price %q unit %q", entry.Product.Attributes["instanceType"], d.PricePerUnit["USD"], d.Unit)
					}
					prices[entry.Product.Attributes["instanceType"]] = v
				}
			}
			if entry.Product.Attributes["regionCode"] != "us-west-2" {
				t.Errorf("region %q", entry.Product.Attributes["regionCode"])
			}
		}
	}
	if len(prices) < 500 || pages < 5 {
		t.Errorf("%d products over %d pages", len(prices), pages)
	}
	for it, want := range map[string]float64{"m5.large": 0.096, "c5.xlarge": 0.17, "t3.micro": 0.0104, "m6g.large": 0.077, "r5.24xlarge": 6.048} {
		if prices[it] != want {
			t.Errorf("%s on demand in us-west-2 = %v, want %v", it, prices[it], want)
		}
	}

	one, err := client.GetProducts(ctx, &pricing.GetProductsInput{ServiceCode: sdkaws.String("AmazonEC2"), Filters: append(filters, term("instanceType", "m5.large"))})
	if err != nil || len(one.PriceList) != 1 {
		t.Errorf("one type = %+v, %v", one, err)
	}
	windows, err := client.GetProducts(ctx, &pricing.GetProductsInput{ServiceCode: sdkaws.String("AmazonEC2"), Filters: []pricingtypes.Filter{term("operatingSystem", "Windows")}})
	if err != nil || len(windows.PriceList) != 0 {
		t.Errorf("windows = %d products, %v; the emulator sells Linux", len(windows.PriceList), err)
	}

	if _, err := e.InjectFault(awsemulator.Fault{Service: "pricing", Kind: awsemulator.FaultAccessDenied}); err != nil {
		t.Fatal(err)
	}
	_, err = client.GetProducts(ctx, &pricing.GetProductsInput{ServiceCode: sdkaws.String("AmazonEC2")})
	var denied *pricingtypes.AccessDeniedException
	if !errors.As(err, &denied) {
		t.Errorf("denied: %v, want AccessDeniedException", err)
	}
	e.ClearFaults()

	if _, err := e.InjectFault(awsemulator.Fault{Service: "ssm", Kind: awsemulator.FaultThrottle}); err != nil {
		t.Fatal(err)
	}
	_, err = ssm.NewFromConfig(cfg).GetParameter(ctx, &ssm.GetParameterInput{Name: sdkaws.String("/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id")})
	if code := errorCode(err); code != "ThrottlingException" {
		t.Errorf("throttled SSM: code %q (%v)", code, err)
	}
	e.ClearFaults()

	// A hung endpoint holds the request until the client's deadline.
	if _, err := e.InjectFault(awsemulator.Fault{Service: "pricing", Kind: awsemulator.FaultHang}); err != nil {
		t.Fatal(err)
	}
	deadline, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = client.GetProducts(deadline, &pricing.GetProductsInput{ServiceCode: sdkaws.String("AmazonEC2")})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hung: %v, want the deadline", err)
	}
}
