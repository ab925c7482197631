package pricing

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"

	"karpenter.sh/karpenter/pkg/providers/awsapi"
)

// onDemandFilters select the price of a plain Linux instance: shared tenancy, no pre-installed
// software, no license, capacity not reserved.
func onDemandFilters(region string) []pricingtypes.Filter {
	var filters []pricingtypes.Filter
	for _, f := range [][2]string{
		{"regionCode", region},
		{"operatingSystem", "Linux"},
		{"tenancy", "Shared"},
		{"preInstalledSw", "NA"},
		{"capacitystatus", "Used"},
	} {
		filters = append(filters, pricingtypes.Filter{Type: pricingtypes.FilterTypeTermMatch, Field: sdkaws.String(f[0]), Value: sdkaws.String(f[1])})
	}
	return filters
}

func readOnDemandPrices(ctx context.Context, client *pricing.Client, region string) (map[string]float64, error) {
	prices := map[string]float64{}
	pages := pricing.NewGetProductsPaginator(client, &pricing.GetProductsInput{
		ServiceCode: sdkaws.String("AmazonEC2"),
		Filters:     onDemandFilters(region),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, awsapi.CallError(err, "pricing:GetProducts", "the on-demand prices of "+region)
		}
		for _, product := range page.PriceList {
			instanceType, price, err := parseOnDemandPrice(product)
			if err != nil {
				return nil, fmt.Errorf("reading the on-demand prices of %s, %w", region, err)
			}
			if instanceType != "" && price > 0 {
				prices[instanceType] = price
			}
		}
	}
	return prices, nil
}

// pricingProduct is the part of a Pricing API price list entry that holds an instance type's
// hourly on-demand price.
type pricingProduct struct {
	Product struct {
		Attributes struct {
			InstanceType string `json:"instanceType"`
		} `json:"attributes"`
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

// parseOnDemandPrice reads one price list entry: the instance type and its hourly USD price,
// "" for an entry with no instance type (e.g. a data transfer price).
func parseOnDemandPrice(entry string) (string, float64, error) {
	var product pricingProduct
	if err := json.Unmarshal([]byte(entry), &product); err != nil {
		return "", 0, fmt.Errorf("decoding a price list entry, %w", err)
	}
	for _, term := range product.Terms.OnDemand {
		for _, dimension := range term.PriceDimensions {
			usd, ok := dimension.PricePerUnit["USD"]
			if !ok {
				continue
			}
			price, err := strconv.ParseFloat(usd, 64)
			if err != nil {
				return "", 0, fmt.Errorf("the price of %s, %w", product.Product.Attributes.InstanceType, err)
			}
			return product.Product.Attributes.InstanceType, price, nil
		}
	}
	return product.Product.Attributes.InstanceType, 0, nil
}

// readSpotPrices reads the latest spot price of every instance type in every zone: the history
// from now holds, for each, the price in force now.
func readSpotPrices(ctx context.Context, client *ec2.Client, now time.Time) (map[spotKey]float64, error) {
	prices := map[spotKey]float64{}
	stamps := map[spotKey]time.Time{}
	pages := ec2.NewDescribeSpotPriceHistoryPaginator(client, &ec2.DescribeSpotPriceHistoryInput{
		ProductDescriptions: []string{"Linux/UNIX"},
		StartTime:           sdkaws.Time(now),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, awsapi.CallError(err, "ec2:DescribeSpotPriceHistory", "the spot prices")
		}
		for _, p := range page.SpotPriceHistory {
			key, stamp := spotKey{string(p.InstanceType), sdkaws.ToString(p.AvailabilityZone)}, sdkaws.ToTime(p.Timestamp)
			if earlier, ok := stamps[key]; ok && !stamp.After(earlier) {
				continue
			}
			price, err := strconv.ParseFloat(sdkaws.ToString(p.SpotPrice), 64)
			if err != nil {
				return nil, fmt.Errorf("the spot price of %s in %s, %w", key.instanceType, key.zone, err)
			}
			prices[key], stamps[key] = price, stamp
		}
	}
	return prices, nil
}
