// Package pricing keeps a region's instance prices: on-demand from the Pricing API, spot from
// EC2's spot price history, and the built-in catalogue's (zz_generated.pricing.go) for what
// neither has answered.
package pricing

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/providers/awsapi"
)

// Book holds a region's prices: those read from the APIs, else the built-in catalogue's. Its
// maps are replaced, never changed, so a Book may be read without a lock.
type Book struct {
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

// Price is an offering's hourly price in US dollars; false when neither the APIs nor the
// built-in catalogue know it (such an offering is not offered: a made-up price would mislead
// the cheapest-first choice).
func (b Book) Price(instanceType, zone, capacityType string) (float64, bool) {
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

// Provider reads the prices of its region and keeps the last Book.
type Provider struct {
	clients awsapi.ClientsFunc
	region  string
	// isolatedVPC: the Pricing API, which has no VPC endpoint, is never called.
	isolatedVPC bool
	clock       clock.PassiveClock

	mu   sync.RWMutex
	book Book
}

// NewProvider builds the provider of region's prices. It does no I/O: before the first Refresh
// the book is the built-in catalogue's, and nothing failed yet, so nothing is stale. With
// isolatedVPC the Pricing API is never called and on-demand prices stay the built-in ones.
func NewProvider(clients awsapi.ClientsFunc, region string, isolatedVPC bool, clk clock.PassiveClock) *Provider {
	return &Provider{clients: clients, region: region, isolatedVPC: isolatedVPC, clock: clk, book: Book{region: region}}
}

// Book is the prices as last read.
func (p *Provider) Book() Book {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.book
}

// Stale is nil while the last read of both price APIs succeeded, else a
// *cloudprovider.StalePricesError saying since when the prices are the last read's.
func (p *Provider) Stale() error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.book.err == nil {
		return nil
	}
	return &cloudprovider.StalePricesError{Since: p.book.readAt, Err: p.book.err}
}

// Refresh re-reads on-demand prices from the Pricing API (unless in an isolated VPC) and spot
// prices from the spot price history. What one API returns replaces what it returned before;
// while one fails, its last prices (or the built-in catalogue's) stay and Stale says why.
func (p *Provider) Refresh(ctx context.Context) {
	c, err := p.clients()
	var onDemand map[string]float64
	var spot map[spotKey]float64
	var onDemandErr, spotErr error
	if err == nil {
		// In an isolated VPC the Pricing API, which has no VPC endpoint, is never called: the
		// built-in on-demand prices stay. EC2's spot price history has one.
		if !p.isolatedVPC {
			onDemand, onDemandErr = readOnDemandPrices(ctx, c.Pricing, p.region)
		}
		spot, spotErr = readSpotPrices(ctx, c.EC2, p.clock.Now())
		err = errors.Join(onDemandErr, spotErr)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	book := p.book
	if onDemandErr == nil && onDemand != nil {
		book.onDemand = onDemand
	}
	if spotErr == nil && spot != nil {
		book.spot = spot
	}
	book.err = err
	if err == nil {
		book.readAt = p.clock.Now()
	}
	p.book = book
}
