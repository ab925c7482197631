package scaletest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Series are the metric families of one scrape, by name.
type Series map[string]*dto.MetricFamily

// ParseExposition reads Prometheus's text exposition format.
func ParseExposition(r io.Reader) (Series, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing metrics, %w", err)
	}
	return families, nil
}

// Scrape reads the metrics served at url, and how many bytes they took.
func Scrape(ctx context.Context, url string) (Series, int, error) {
	body, err := Get(ctx, url)
	if err != nil {
		return nil, 0, err
	}
	defer func() { _ = body.Close() }()
	counted := &countingReader{r: body}
	s, err := ParseExposition(counted)
	return s, counted.n, err
}

// Get is the body of a successful GET of url; the caller closes it.
func Get(ctx context.Context, url string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("getting %s, %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("getting %s: %s", url, resp.Status)
	}
	return resp.Body, nil
}

// Sum adds the counter or gauge values of a metric whose labels include match, grouped by
// the values of the labels by (joined with " "); one group "" without by.
func (s Series) Sum(name string, match map[string]string, by ...string) map[string]float64 {
	sums := map[string]float64{}
	for _, m := range s.matching(name, match) {
		labels := labelsOf(m)
		var key []string
		for _, l := range by {
			key = append(key, labels[l])
		}
		value := m.GetCounter().GetValue()
		if m.GetGauge() != nil {
			value = m.GetGauge().GetValue()
		}
		sums[strings.Join(key, " ")] += value
	}
	return sums
}

// Histogram adds the sums and counts of observations of a histogram whose labels include match.
func (s Series) Histogram(name string, match map[string]string) (sum, count float64) {
	for _, m := range s.matching(name, match) {
		if h := m.GetHistogram(); h != nil {
			sum, count = sum+h.GetSampleSum(), count+float64(h.GetSampleCount())
		}
	}
	return sum, count
}

// matching are the metrics of a family whose labels include match.
func (s Series) matching(name string, match map[string]string) []*dto.Metric {
	family, ok := s[name]
	if !ok {
		return nil
	}
	var out []*dto.Metric
	for _, m := range family.GetMetric() {
		labels := labelsOf(m)
		matches := true
		for k, v := range match {
			matches = matches && labels[k] == v
		}
		if matches {
			out = append(out, m)
		}
	}
	return out
}

func labelsOf(m *dto.Metric) map[string]string {
	labels := map[string]string{}
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	return labels
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}
