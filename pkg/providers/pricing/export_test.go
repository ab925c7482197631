package pricing

// FallbackPrice is an instance type's built-in on-demand and spot price in a region, for tests
// that check the fallback.
func FallbackPrice(region, instanceType string) (onDemand, spot float64) {
	p := fallbackPrices[region][instanceType]
	return p.OnDemand, p.Spot
}
