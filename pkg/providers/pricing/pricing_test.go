package pricing_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	clocktesting "k8s.io/utils/clock/testing"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/providers/pricing"
	"karpenter.sh/karpenter/pkg/test/awstest"
	"karpenter.sh/karpenter/test/awsemulator"
)

type env struct {
	emulator *awsemulator.Emulator
	clock    *clocktesting.FakeClock
	ec2      *ec2.Client
}

// newEnv serves an emulator seeded with seed and a pricing provider of its region against it.
func newEnv(t *testing.T, seed string, isolatedVPC bool) (*env, *pricing.Provider) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	emulator, server := awstest.Serve(t, awsemulator.Options{Clock: clk}, seed)
	clients := awstest.Clients(t, server.URL, clk)
	c, err := clients()
	if err != nil {
		t.Fatal(err)
	}
	return &env{emulator: emulator, clock: clk, ec2: c.EC2}, pricing.NewProvider(clients, awstest.Region, isolatedVPC, clk)
}

// zones are those the emulator's region offers m5.large in.
var zones = []string{"us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"}

func TestSpotPricesAreTheLatestOfTheHistory(t *testing.T) {
	e, prices := newEnv(t, "", false)
	prices.Refresh(context.Background())
	out, err := e.ec2.DescribeSpotPriceHistory(context.Background(), &ec2.DescribeSpotPriceHistoryInput{
		InstanceTypes:       []ec2types.InstanceType{"m5.large"},
		ProductDescriptions: []string{"Linux/UNIX"},
		StartTime:           sdkaws.Time(e.clock.Now()),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{}
	for _, p := range out.SpotPriceHistory {
		price, err := strconv.ParseFloat(sdkaws.ToString(p.SpotPrice), 64)
		if err != nil {
			t.Fatal(err)
		}
		want[sdkaws.ToString(p.AvailabilityZone)] = price
	}
	if want["us-west-2a"] == want["us-west-2b"] {
		t.Fatalf("the emulator's spot prices are the same in every zone (%v): the test cannot tell them apart", want)
	}
	book := prices.Book()
	for zone, price := range want {
		if got, ok := book.Price("m5.large", zone, v1alpha5.CapacityTypeSpot); !ok || got != price {
			t.Errorf("spot price of m5.large in %s = %g, %t; the history says %g", zone, got, ok, price)
		}
	}
}

func TestPricesFallBackWhenThePricingAPIIsDenied(t *testing.T) {
	e, prices := newEnv(t, "", false)
	if _, err := e.emulator.InjectFault(awsemulator.Fault{Service: "pricing", Kind: awsemulator.FaultAccessDenied}); err != nil {
		t.Fatal(err)
	}
	prices.Refresh(context.Background())
	err := prices.Stale()
	var stale *cloudprovider.StalePricesError
	var denied *cloudprovider.AccessDeniedError
	if !errors.As(err, &stale) || !errors.As(err, &denied) || denied.Action != "pricing:GetProducts" || !stale.Since.IsZero() {
		t.Fatalf("Stale = %v, want stale since never, access denied naming pricing:GetProducts", err)
	}
	onDemand, _ := pricing.FallbackPrice(awstest.Region, "m5.large")
	for _, zone := range zones {
		if got, ok := prices.Book().Price("m5.large", zone, v1alpha5.CapacityTypeOnDemand); !ok || got != onDemand {
			t.Errorf("on-demand price of m5.large in %s = %g, %t; want the built-in %g", zone, got, ok, onDemand)
		}
	}
}

func TestOnDemandPricesFromThePricingAPI(t *testing.T) {
	e, prices := newEnv(t, `
catalogue:
  prices:
    m5.large: {onDemand: 0.5, spotMin: 0.1, spotMax: 0.2}
`, false)
	prices.Refresh(context.Background())
	if err := prices.Stale(); err != nil {
		t.Fatalf("Stale = %v", err)
	}
	builtIn, _ := pricing.FallbackPrice(awstest.Region, "m5.large")
	for _, zone := range zones {
		if got, _ := prices.Book().Price("m5.large", zone, v1alpha5.CapacityTypeOnDemand); got != 0.5 {
			t.Errorf("on-demand price in %s = %g, want the Pricing API's 0.5 (built in: %g)", zone, got, builtIn)
		}
		if got, _ := prices.Book().Price("m5.large", zone, v1alpha5.CapacityTypeSpot); got < 0.1 || got > 0.2 {
			t.Errorf("spot price in %s = %g, want the history's, within [0.1, 0.2]", zone, got)
		}
	}
	// Once read, prices stay the last read while the APIs fail, and say since when.
	if _, err := e.emulator.InjectFault(awsemulator.Fault{Service: "pricing", Kind: awsemulator.FaultAccessDenied}); err != nil {
		t.Fatal(err)
	}
	readAt := e.clock.Now()
	e.clock.Step(time.Hour)
	prices.Refresh(context.Background())
	var stale *cloudprovider.StalePricesError
	if err := prices.Stale(); !errors.As(err, &stale) || !stale.Since.Equal(readAt) {
		t.Errorf("Stale = %v, want stale since %s", err, readAt)
	}
	if got, _ := prices.Book().Price("m5.large", zones[0], v1alpha5.CapacityTypeOnDemand); got != 0.5 {
		t.Errorf("on-demand price = %g after a failed refresh, want the last read 0.5", got)
	}
}

// TestIsolatedVPCNeverCallsThePricingAPI: with upstream's ISOLATED_VPC the Pricing API, which
// has no VPC endpoint, is not called (a denied call would make the prices stale), and on-demand
// offerings carry the built-in prices.
func TestIsolatedVPCNeverCallsThePricingAPI(t *testing.T) {
	e, prices := newEnv(t, "", true)
	if _, err := e.emulator.InjectFault(awsemulator.Fault{Service: "pricing", Kind: awsemulator.FaultAccessDenied}); err != nil {
		t.Fatal(err)
	}
	prices.Refresh(context.Background())
	if err := prices.Stale(); err != nil {
		t.Errorf("Stale = %v: the Pricing API was called in an isolated VPC", err)
	}
	onDemand, _ := pricing.FallbackPrice(awstest.Region, "m5.large")
	for _, zone := range zones {
		if got, _ := prices.Book().Price("m5.large", zone, v1alpha5.CapacityTypeOnDemand); got != onDemand {
			t.Errorf("on-demand price of m5.large in %s = %g, want the built-in %g", zone, got, onDemand)
		}
	}
}

// An offering neither the APIs nor the built-in catalogue price is not offered.
func TestUnknownPricesAreNotMadeUp(t *testing.T) {
	_, prices := newEnv(t, "", false)
	if price, ok := prices.Book().Price("m99.unknown", zones[0], v1alpha5.CapacityTypeOnDemand); ok {
		t.Errorf("Price of an unknown type = %g, true; want none", price)
	}
}
