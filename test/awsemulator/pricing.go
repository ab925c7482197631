package awsemulator

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// regionNames are the Pricing API's location names of the catalogue's regions.
var regionNames = map[string]string{
	"us-east-1": "US East (N. Virginia)",
	"us-west-2": "US West (Oregon)",
	"eu-west-1": "EU (Ireland)",
}

type pricingFilter struct {
	Type  string `json:"Type"`
	Field string `json:"Field"`
	Value string `json:"Value"`
}

type pricingGetProductsInput struct {
	ServiceCode   string          `json:"ServiceCode"`
	Filters       []pricingFilter `json:"Filters"`
	FormatVersion string          `json:"FormatVersion"`
	NextToken     string          `json:"NextToken"`
	MaxResults    *int            `json:"MaxResults"`
}

func (e *Emulator) servePricing(w http.ResponseWriter, req *request) *apiError {
	switch req.action {
	case "GetProducts":
		return serveJSON11(e, w, req, e.getProducts)
	default:
		return &apiError{status: http.StatusBadRequest, code: "UnknownOperationException", message: fmt.Sprintf("%s is not a Pricing operation this emulator serves", req.action)}
	}
}

func errPricingInvalidParameter(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "InvalidParameterException", message: fmt.Sprintf(format, args...)}
}

// getProducts lists the Linux, shared-tenancy, no-software on-demand products of AmazonEC2
// for the catalogue's types and regions, as price list JSON documents.
func (e *Emulator) getProducts(in pricingGetProductsInput, _ time.Time) (any, *apiError) {
	if in.ServiceCode == "" {
		return nil, errPricingInvalidParameter("Input validation error: ServiceCode is required")
	}
	limit := 100
	if in.MaxResults != nil {
		if *in.MaxResults < 1 || *in.MaxResults > 100 {
			return nil, errPricingInvalidParameter("Input validation error: MaxResults must be between 1 and 100")
		}
		limit = *in.MaxResults
	}
	for _, f := range in.Filters {
		if f.Type != "TERM_MATCH" && f.Type != "EQUALS" {
			return nil, errPricingInvalidParameter("Input validation error: the emulator serves TERM_MATCH and EQUALS filters, not %q", f.Type)
		}
	}
	type product struct{ region, instanceType string }
	var products []product
	if in.ServiceCode == "AmazonEC2" {
		for _, region := range sortedKeys(e.catalogue.Prices) {
			for _, t := range sortedKeys(e.catalogue.Prices[region]) {
				if _, ok := e.catalogue.Types[t]; ok && matchPricingFilters(in.Filters, e.productAttributes(region, t)) {
					products = append(products, product{region, t})
				}
			}
		}
	}
	start := 0
	if in.NextToken != "" {
		b, err := base64.RawURLEncoding.DecodeString(in.NextToken)
		n, convErr := strconv.Atoi(string(b))
		if err != nil || convErr != nil || n < 0 || n > len(products) {
			return nil, &apiError{status: http.StatusBadRequest, code: "InvalidNextTokenException", message: "Invalid NextToken"}
		}
		start = n
	}
	end := min(start+limit, len(products))
	out := struct {
		FormatVersion string   `json:"FormatVersion"`
		PriceList     []string `json:"PriceList"`
		NextToken     string   `json:"NextToken,omitempty"`
	}{FormatVersion: "aws_v1", PriceList: []string{}}
	for _, p := range products[start:end] {
		doc, err := json.Marshal(e.priceListEntry(p.region, p.instanceType))
		if err != nil {
			return nil, &apiError{status: http.StatusInternalServerError, code: "InternalErrorException", message: err.Error(), server: true}
		}
		out.PriceList = append(out.PriceList, string(doc))
	}
	if end < len(products) {
		out.NextToken = base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(end)))
	}
	return out, nil
}

// matchPricingFilters compares fields case-insensitively, as the Pricing API does.
func matchPricingFilters(filters []pricingFilter, attributes map[string]string) bool {
	for _, f := range filters {
		matched := false
		for k, v := range attributes {
			if strings.EqualFold(k, f.Field) && strings.EqualFold(v, f.Value) {
				matched = true
			}
		}
		if !matched {
			return false
		}
	}
	return true
}

func (e *Emulator) productAttributes(region, instanceType string) map[string]string {
	t := e.catalogue.Types[instanceType]
	return map[string]string{
		"servicecode": "AmazonEC2", "regionCode": region, "location": regionNames[region], "locationType": "AWS Region",
		"instanceType": instanceType, "vcpu": strconv.Itoa(int(t.VCPUs)),
		"memory":          strconv.FormatFloat(float64(t.MemoryMiB)/1024, 'f', -1, 64) + " GiB",
		"operatingSystem": "Linux", "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used",
		"licenseModel": "No License required", "operation": "RunInstances", "usagetype": "BoxUsage:" + instanceType,
		"processorArchitecture": strings.Join(slices.Sorted(slices.Values(t.Architectures)), ", "),
	}
}

// priceListEntry is one product of a price list: the product with its attributes, and its
// on-demand term with the hourly price in USD.
func (e *Emulator) priceListEntry(region, instanceType string) map[string]any {
	sku := skuOf(region, instanceType)
	price := e.catalogue.Prices[region][instanceType].OnDemand
	const offerTerm, rateCode = "JRTCKXETXF", "6YS6EN2CT7"
	return map[string]any{
		"product": map[string]any{
			"productFamily": "Compute Instance",
			"attributes":    e.productAttributes(region, instanceType),
			"sku":           sku,
		},
		"serviceCode": "AmazonEC2",
		"terms": map[string]any{
			"OnDemand": map[string]any{
				sku + "." + offerTerm: map[string]any{
					"offerTermCode": offerTerm,
					"sku":           sku,
					"effectiveDate": e.started.UTC().Format("2006-01-02T15:04:05Z"),
					"priceDimensions": map[string]any{
						sku + "." + offerTerm + "." + rateCode: map[string]any{
							"unit":         "Hrs",
							"endRange":     "Inf",
							"beginRange":   "0",
							"description":  fmt.Sprintf("$%s per On Demand Linux %s Instance Hour", strconv.FormatFloat(price, 'f', -1, 64), instanceType),
							"appliesTo":    []string{},
							"rateCode":     sku + "." + offerTerm + "." + rateCode,
							"pricePerUnit": map[string]string{"USD": strconv.FormatFloat(price, 'f', 10, 64)},
						},
					},
					"termAttributes": map[string]string{},
				},
			},
		},
		"version":         "20260101000000",
		"publicationDate": e.started.UTC().Format("2006-01-02T15:04:05Z"),
	}
}

// skuOf is a stable SKU-shaped id for a product.
func skuOf(region, instanceType string) string {
	sum := sha256.Sum256([]byte(region + "/" + instanceType))
	return strings.ToUpper(hex.EncodeToString(sum[:8]))
}
