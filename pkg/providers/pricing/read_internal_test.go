package pricing

import "testing"

func TestParseOnDemandPrice(t *testing.T) {
	entry := `{"product":{"attributes":{"instanceType":"m5.large","operatingSystem":"Linux"}},"terms":{"OnDemand":{"X.JRTCKXETXF":{"priceDimensions":{"X.JRTCKXETXF.6YS6EN2CT7":{"unit":"Hrs","pricePerUnit":{"USD":"0.0960000000"}}}}}}}`
	typ, price, err := parseOnDemandPrice(entry)
	if err != nil || typ != "m5.large" || price != 0.096 {
		t.Errorf("parseOnDemandPrice = %q, %g, %v; want m5.large, 0.096", typ, price, err)
	}
	if _, _, err := parseOnDemandPrice(`{"terms":{"OnDemand":{"a":{"priceDimensions":{"b":{"pricePerUnit":{"USD":"x"}}}}}}}`); err == nil {
		t.Error("a price that is not a number was accepted")
	}
}
