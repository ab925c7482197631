package aws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
)

// priceBook holds a region's prices: those read from the APIs, else the built-in catalogue's.
// Its maps are replaced, never changed, so a copy of the book may be read without a lock.
type priceBook struct {
	region string
	// onDemand maps an instance type to its hourly on-demand price, as read.
	onDemand map[string]float64
	// spot maps an instance type and zone to the latest hourly spot price, as read.
	spot map[spotKey]float64
	// readAt is when both were last read successfully, zero if never.
	readAt time.Time
	// err is why the last read failed, nil when it succeeded.
	err error
}

type spotKey struct{ instanceType, zone string }

func newPriceBook(region string) priceBook {
	return priceBook{region: region, err: errors.New("not read yet")}
}

// price is an offering's hourly price in US dollars; false when neither the APIs nor the
// built-in catalogue know it (such an offering is not offered: a made-up price would mislead
// the cheapest-first choice).
func (b priceBook) price(instanceType, zone, capacityType string) (float64, bool) {
	var price float64
	var ok bool
	fallback := fallbackPrices[b.region][instanceType]
	if capacityType == v1alpha5.CapacityTypeSpot {
		if price, ok = b.spot[spotKey{instanceType, zone}]; !ok {
			price, ok = fallback.Spot, fallback.Spot > 0
		}
	} else {
		if price, ok = b.onDemand[instanceType]; !ok {
			price, ok = fallback.OnDemand, fallback.OnDemand > 0
		}
	}
	return price, ok && price > 0
}

// StalePrices is nil while the last read of both price APIs succeeded.
func (i *Instances) StalePrices() error {
	i.mu.RLock()
	defer i.mu.RUnlock()
	if i.prices.err == nil {
		return nil
	}
	return &cloudprovider.StalePricesError{Since: i.prices.readAt, Err: i.prices.err}
}

// RefreshPrices re-reads on-demand prices from the Pricing API and spot prices from the spot
// price history. What one API returns replaces what it returned before; while one fails, its
// last prices (or the built-in catalogue's) stay and StalePrices says why.
func (i *Instances) RefreshPrices(ctx context.Context) {
	c, err := i.clients()
	var onDemand map[string]float64
	var spot map[spotKey]float64
	var onDemandErr, spotErr error
	if err == nil {
		onDemand, onDemandErr = readOnDemandPrices(ctx, c.pricing, i.provider.Region())
		spot, spotErr = readSpotPrices(ctx, c.ec2, i.clock.Now())
		err = errors.Join(onDemandErr, spotErr)
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	book := i.prices
	if onDemandErr == nil && onDemand != nil {
		book.onDemand = onDemand
	}
	if spotErr == nil && spot != nil {
		book.spot = spot
	}
	book.err = err
	if err == nil {
		book.readAt = i.clock.Now()
	}
	i.prices = book
}

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
			return nil, callError(err, "pricing:GetProducts", "the on-demand prices of "+region)
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
			return nil, callError(err, "ec2:DescribeSpotPriceHistory", "the spot prices")
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
